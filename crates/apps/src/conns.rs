//! An application endpoint's connections by number.

/// Connections by number, kept in the order of their numbers as a `BTreeMap` keeps them,
/// in one sorted vector: an endpoint holds a few connections and asks for the next one
/// to serve on every poll, which a vector answers from one cache line where the map
/// walked its tree twice. Lookups are binary searches; an insertion or removal moves the
/// entries after it (a few, or a few thousand for a web page load's many connections).
#[derive(Debug)]
pub(crate) struct Conns<C> {
    v: Vec<(u32, C)>,
}

impl<C> Default for Conns<C> {
    fn default() -> Self {
        Conns { v: Vec::new() }
    }
}

impl<C> Conns<C> {
    fn find(&self, k: u32) -> Result<usize, usize> {
        self.v.binary_search_by_key(&k, |e| e.0)
    }

    pub(crate) fn len(&self) -> usize {
        self.v.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    pub(crate) fn contains_key(&self, k: &u32) -> bool {
        self.find(*k).is_ok()
    }

    pub(crate) fn get(&self, k: &u32) -> Option<&C> {
        self.find(*k).ok().map(|i| &self.v[i].1)
    }

    pub(crate) fn get_mut(&mut self, k: &u32) -> Option<&mut C> {
        self.find(*k).ok().map(|i| &mut self.v[i].1)
    }

    /// Puts `c` under `k`, returning the connection it replaces.
    pub(crate) fn insert(&mut self, k: u32, c: C) -> Option<C> {
        match self.find(k) {
            Ok(i) => Some(std::mem::replace(&mut self.v[i].1, c)),
            Err(i) => {
                self.v.insert(i, (k, c));
                None
            }
        }
    }

    pub(crate) fn remove(&mut self, k: &u32) -> Option<C> {
        self.find(*k).ok().map(|i| self.v.remove(i).1)
    }

    /// The connections in the order of their numbers.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&u32, &C)> {
        self.v.iter().map(|(k, c)| (k, c))
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &C> {
        self.v.iter().map(|(_, c)| c)
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut C> {
        self.v.iter_mut().map(|(_, c)| c)
    }

    /// Round robin from `cursor`: the connections numbered `cursor` or above in order,
    /// then those below it.
    pub(crate) fn round_robin_mut(&mut self, cursor: u32) -> impl Iterator<Item = (u32, &mut C)> {
        let start = self.v.partition_point(|e| e.0 < cursor);
        let (below, rest) = self.v.split_at_mut(start);
        rest.iter_mut().chain(below.iter_mut()).map(|(k, c)| (*k, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Every operation, from a seeded script, against `BTreeMap`.
    #[test]
    fn the_connections_answer_as_a_btree_map_does() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let mut ours = Conns::default();
        let mut map = BTreeMap::new();
        for step in 0..20_000u32 {
            let k = next(40) as u32;
            match next(6) {
                0 | 1 => assert_eq!(ours.insert(k, step), map.insert(k, step)),
                2 => assert_eq!(ours.remove(&k), map.remove(&k)),
                3 => {
                    if let (Some(a), Some(b)) = (ours.get_mut(&k), map.get_mut(&k)) {
                        *a += 1;
                        *b += 1;
                    }
                }
                4 => {
                    let a: Vec<(u32, u32)> = ours.round_robin_mut(k).map(|(k, c)| (k, *c)).collect();
                    let b: Vec<(u32, u32)> = map.range(k..).chain(map.range(..k)).map(|(k, c)| (*k, *c)).collect();
                    assert_eq!(a, b, "from {k}");
                }
                _ => {
                    for v in ours.values_mut().chain(map.values_mut()) {
                        *v = v.wrapping_mul(3);
                    }
                }
            }
            assert_eq!(ours.get(&k), map.get(&k));
            assert_eq!(ours.contains_key(&k), map.contains_key(&k));
            assert_eq!((ours.len(), ours.is_empty()), (map.len(), map.is_empty()));
            assert!(ours.iter().eq(map.iter()));
            assert!(ours.values().eq(map.values()));
        }
    }
}

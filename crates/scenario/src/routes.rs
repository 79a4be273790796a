//! Routes: the path a packet takes from any node to any other, computed once from the
//! scenario's links and used by both backends (the simulator forwards along them, the live
//! testbed installs them as kernel routes).
//!
//! Shortest paths in hops by breadth-first search from each node; ties are broken by the
//! order of the links in the scenario, so routes are deterministic.

use crate::Link;
use std::collections::VecDeque;

const NONE: u32 = u32::MAX;

/// Where a packet at one node goes: the link most destinations take, and the
/// destinations that take another (sorted by destination; `NONE` where unreachable). A
/// host with one link has no exceptions, so a dumbbell of N flows keeps O(N) entries, not
/// a table of (2N)² (10 000 flows: 1.6 GB).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Row {
    default: u32,
    except: Vec<(u32, u32)>,
}

/// Up to this many nodes the routes are also kept as a full table (at most 256 KiB), where
/// a packet's next link is one load: the search of a router's exceptions, one dependent
/// load after another, took a fifth of the time a packet spent at a node in a dumbbell of
/// 20 flows.
const DENSE_MAX: usize = 256;

/// `next[node][dst]`: the link a packet at `node` for `dst` takes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routes {
    rows: Vec<Row>,
    /// The same as `rows`, as a full table `dense[node · n + dst]`, for `n` up to
    /// [`DENSE_MAX`] nodes; empty beyond.
    dense: Vec<u32>,
    /// The node each link leads to.
    link_to: Vec<u32>,
}

impl Routes {
    /// Routes between `n` nodes over `links`, in O(n + links) per node that has more than
    /// one link out, and O(1) for the others when every node can reach every other.
    pub fn compute(n: usize, links: &[Link]) -> Routes {
        // The links out of each node, in scenario order (the tie-break).
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, l) in links.iter().enumerate() {
            out[l.from].push(i as u32);
        }
        let connected = strongly_connected(n, links, &out);
        let mut row = vec![NONE; n];
        let mut seen = vec![false; n];
        let mut q = VecDeque::new();
        let mut count = vec![0u32; links.len()];
        let rows = (0..n)
            .map(|src| {
                if connected && out[src].len() == 1 {
                    // Everything is reached through the one link.
                    return Row {
                        default: out[src][0],
                        except: Vec::new(),
                    };
                }
                // Breadth-first from src, remembering the first link taken.
                row.fill(NONE);
                seen.fill(false);
                seen[src] = true;
                for &i in &out[src] {
                    let to = links[i as usize].to;
                    if !seen[to] {
                        seen[to] = true;
                        row[to] = i;
                        q.push_back(to);
                    }
                }
                while let Some(x) = q.pop_front() {
                    for &i in &out[x] {
                        let to = links[i as usize].to;
                        if !seen[to] {
                            seen[to] = true;
                            row[to] = row[x];
                            q.push_back(to);
                        }
                    }
                }
                compress(src, &row, &mut count)
            })
            .collect();
        let mut routes = Routes {
            rows,
            dense: Vec::new(),
            link_to: links.iter().map(|l| l.to as u32).collect(),
        };
        if n <= DENSE_MAX {
            routes.dense = (0..n * n)
                .map(|i| routes.sparse_next(i / n, i % n).map_or(NONE, |l| l as u32))
                .collect();
        }
        routes
    }

    /// Whether the routes are held as a full table (up to 256 nodes), where a table of
    /// the caller's for every pair of nodes is as small.
    pub fn is_dense(&self) -> bool {
        !self.dense.is_empty()
    }

    /// The link a packet at node `at` takes towards `dst` (`None` at `dst` itself or when
    /// `dst` cannot be reached).
    #[inline]
    pub fn next_link(&self, at: usize, dst: usize) -> Option<usize> {
        if !self.dense.is_empty() {
            let n = self.rows.len();
            if at >= n || dst >= n {
                return None;
            }
            let l = self.dense[at * n + dst];
            return (l != NONE).then_some(l as usize);
        }
        self.sparse_next(at, dst)
    }

    /// [`Routes::next_link`] from the compressed rows.
    #[inline]
    fn sparse_next(&self, at: usize, dst: usize) -> Option<usize> {
        let r = self.rows.get(at)?;
        if at == dst || dst >= self.rows.len() {
            return None;
        }
        let l = if r.except.is_empty() {
            r.default
        } else {
            match r.except.binary_search_by_key(&(dst as u32), |e| e.0) {
                Ok(i) => r.except[i].1,
                Err(_) => r.default,
            }
        };
        (l != NONE).then_some(l as usize)
    }

    /// Can `to` be reached from `from`?
    pub fn reachable(&self, from: usize, to: usize) -> bool {
        from == to || self.next_link(from, to).is_some()
    }

    /// The links of the path from `from` to `to`, in order (empty if unreachable).
    pub fn path<'a>(&'a self, from: usize, to: usize) -> Path<'a> {
        Path {
            routes: self,
            at: from,
            to,
            hops: 0,
        }
    }

    /// Hops from `from` to `to` (`None` if unreachable).
    pub fn hops(&self, from: usize, to: usize) -> Option<usize> {
        self.reachable(from, to).then(|| self.path(from, to).count())
    }
}

/// The links from one node to another; see [`Routes::path`].
pub struct Path<'a> {
    routes: &'a Routes,
    at: usize,
    to: usize,
    hops: usize,
}

impl Iterator for Path<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.at == self.to || self.hops > self.routes.rows.len() {
            return None;
        }
        let l = self.routes.next_link(self.at, self.to)?;
        self.hops += 1;
        self.at = self.routes.link_to[l] as usize;
        Some(l)
    }
}

/// Whether every node reaches every other: breadth-first from node 0 over the links and
/// over the links reversed.
fn strongly_connected(n: usize, links: &[Link], out: &[Vec<u32>]) -> bool {
    if n == 0 {
        return true;
    }
    let mut inn: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, l) in links.iter().enumerate() {
        inn[l.to].push(i as u32);
    }
    let reach = |adj: &[Vec<u32>], end: &dyn Fn(&Link) -> usize| {
        let mut seen = vec![false; n];
        seen[0] = true;
        let mut q = VecDeque::from([0usize]);
        let mut k = 1;
        while let Some(x) = q.pop_front() {
            for &i in &adj[x] {
                let y = end(&links[i as usize]);
                if !seen[y] {
                    seen[y] = true;
                    k += 1;
                    q.push_back(y);
                }
            }
        }
        k == n
    };
    reach(out, &|l| l.to) && reach(&inn, &|l| l.from)
}

/// `row` (the link towards each destination from `src`) as its most common link and the
/// exceptions; `count` is scratch space of one counter per link.
fn compress(src: usize, row: &[u32], count: &mut [u32]) -> Row {
    let mut default = NONE;
    let mut best = 0;
    for (d, &l) in row.iter().enumerate() {
        if d != src && l != NONE {
            let c = &mut count[l as usize];
            *c += 1;
            // The most common; among equals, the lowest link (deterministic).
            if *c > best || (*c == best && l < default) {
                best = *c;
                default = l;
            }
        }
    }
    for &l in row {
        if l != NONE {
            count[l as usize] = 0;
        }
    }
    let except = row
        .iter()
        .enumerate()
        .filter(|&(d, &l)| d != src && l != default)
        .map(|(d, &l)| (d as u32, l))
        .collect();
    Row { default, except }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Link;
    use l4s_aqm::AqmConfig;
    use l4s_core::Dur;

    fn link(from: usize, to: usize) -> Link {
        Link::wire(
            format!("{from}-{to}"),
            from,
            to,
            None,
            Dur::ZERO,
            AqmConfig::Fifo(Default::default()),
        )
    }

    /// The routes the straightforward way: breadth-first from every node over every link,
    /// a full table.
    fn reference(n: usize, links: &[Link]) -> Vec<Vec<Option<usize>>> {
        (0..n)
            .map(|src| {
                let mut row = vec![None; n];
                let mut seen = vec![false; n];
                seen[src] = true;
                let mut q = VecDeque::new();
                for (i, l) in links.iter().enumerate() {
                    if l.from == src && !seen[l.to] {
                        seen[l.to] = true;
                        row[l.to] = Some(i);
                        q.push_back(l.to);
                    }
                }
                while let Some(x) = q.pop_front() {
                    for l in links {
                        if l.from == x && !seen[l.to] {
                            seen[l.to] = true;
                            row[l.to] = row[x];
                            q.push_back(l.to);
                        }
                    }
                }
                row
            })
            .collect()
    }

    #[test]
    fn compressed_routes_agree_with_a_full_table_on_random_graphs() {
        let mut rng = l4s_core::Rng::new(11);
        for case in 0..300 {
            let n = 1 + rng.below(12) as usize;
            let mut links = Vec::new();
            // Half the graphs are trees with links both ways (every node reaches every
            // other, leaves have one link out); the others random and directed.
            if case % 2 == 0 {
                for v in 1..n {
                    let u = rng.below(v as u64) as usize;
                    links.push(link(u, v));
                    links.push(link(v, u));
                }
            } else {
                for _ in 0..rng.below(3 * n as u64) {
                    links.push(link(rng.below(n as u64) as usize, rng.below(n as u64) as usize));
                }
            }
            let r = Routes::compute(n, &links);
            let want = reference(n, &links);
            for (a, row) in want.iter().enumerate() {
                for (b, w) in row.iter().enumerate() {
                    assert_eq!(r.next_link(a, b), *w, "case {case}: {a} -> {b} over {n} nodes");
                    assert_eq!(r.sparse_next(a, b), *w, "case {case}: {a} -> {b} over {n} nodes");
                }
            }
        }
    }

    #[test]
    fn a_dumbbell_of_many_flows_keeps_few_entries() {
        // Two routers (0, 1), and 2 hosts per flow, each with one link to its router.
        let flows = 5_000;
        let mut links = vec![link(0, 1), link(1, 0)];
        for f in 0..flows {
            let (s, d) = (2 + 2 * f, 3 + 2 * f);
            links.extend([link(s, 0), link(0, s), link(d, 1), link(1, d)]);
        }
        let n = 2 + 2 * flows;
        let r = Routes::compute(n, &links);
        let entries: usize = r.rows.iter().map(|x| x.except.len()).sum();
        assert!(entries <= 2 * n, "{entries} exceptions for {n} nodes");
        assert!(r.dense.is_empty(), "no table of {n}² entries");
        // A sender reaches its receiver over its access link, the core and the far side.
        let path: Vec<usize> = r.path(2, 3).collect();
        assert_eq!(path.len(), 3);
        assert_eq!(links[path[1]].from, 0);
        assert_eq!(links[path[2]].to, 3);
    }
}

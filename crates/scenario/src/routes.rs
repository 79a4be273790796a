//! Routes: the path a packet takes from any node to any other, computed once from the
//! scenario's links and used by both backends (the simulator forwards along them, the live
//! testbed installs them as kernel routes).
//!
//! Shortest paths in hops by breadth-first search from each node; ties are broken by the
//! order of the links in the scenario, so routes are deterministic.

use crate::Link;
use std::collections::VecDeque;

const NONE: u32 = u32::MAX;

/// `next[node][dst]`: the link a packet at `node` for `dst` takes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Routes {
    next: Vec<Vec<u32>>,
    /// The node each link leads to.
    link_to: Vec<u32>,
}

impl Routes {
    /// Routes between `n` nodes over `links`.
    pub fn compute(n: usize, links: &[Link]) -> Routes {
        let mut next = vec![vec![NONE; n]; n];
        for (src, row) in next.iter_mut().enumerate() {
            // Breadth-first from src, remembering the first link taken.
            let mut seen = vec![false; n];
            seen[src] = true;
            let mut q = VecDeque::new();
            for (i, l) in links.iter().enumerate() {
                if l.from == src && !seen[l.to] {
                    seen[l.to] = true;
                    row[l.to] = i as u32;
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
        }
        Routes {
            next,
            link_to: links.iter().map(|l| l.to as u32).collect(),
        }
    }

    /// The link a packet at node `at` takes towards `dst` (`None` at `dst` itself or when
    /// `dst` cannot be reached).
    #[inline]
    pub fn next_link(&self, at: usize, dst: usize) -> Option<usize> {
        match *self.next.get(at)?.get(dst)? {
            NONE => None,
            l => Some(l as usize),
        }
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
        if self.at == self.to || self.hops > self.routes.next.len() {
            return None;
        }
        let l = self.routes.next_link(self.at, self.to)?;
        self.hops += 1;
        self.at = self.routes.link_to[l] as usize;
        Some(l)
    }
}

//! A token bucket of bytes: the DOCSIS rate shapers' (DOCSIS 3.1 MULPI §7.2.5.2, the
//! maximum sustained rate with a bucket of `max_traffic_burst`, and the peak rate), shared by
//! the upstream and downstream links.

/// A bucket filled at `rate` bytes per second up to `size`; without a rate it is unlimited
/// (its tokens are infinite, and taking from it leaves it so).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TokenBucket {
    rate: Option<f64>,
    size: f64,
    tokens: f64,
}

impl TokenBucket {
    /// A full bucket of `size` bytes filled at `rate` bytes/s, or an unlimited one.
    pub fn new(rate: Option<f64>, size: f64) -> TokenBucket {
        let size = if rate.is_some() { size } else { f64::INFINITY };
        TokenBucket {
            rate,
            size,
            tokens: size,
        }
    }

    pub fn tokens(&self) -> f64 {
        self.tokens
    }

    /// Add `secs` of the rate, up to the size; `whole_bytes`: in whole bytes only (the
    /// fraction of a byte earned is forfeited).
    pub fn fill(&mut self, secs: f64, whole_bytes: bool) {
        if let Some(r) = self.rate {
            let earned = secs * r;
            let earned = if whole_bytes { earned.floor() } else { earned };
            self.tokens = (self.tokens + earned).min(self.size);
        }
    }

    /// Take `bytes` (the balance may go below zero).
    pub fn take(&mut self, bytes: f64) {
        if self.rate.is_some() {
            self.tokens -= bytes;
        }
    }

    /// Take `bytes`, never below an empty bucket.
    pub fn take_to_empty(&mut self, bytes: f64) {
        self.tokens = (self.tokens - bytes).max(0.0);
    }

    /// Give back `bytes` granted but not used (beyond the size, as they were taken from it).
    pub fn credit(&mut self, bytes: f64) {
        if self.rate.is_some() {
            self.tokens += bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_fills_at_its_rate_up_to_its_size_and_an_unlimited_one_never_empties() {
        let mut b = TokenBucket::new(Some(1000.0), 500.0);
        assert_eq!(b.tokens(), 500.0);
        b.take_to_empty(800.0);
        assert_eq!(b.tokens(), 0.0);
        b.fill(0.2505, true);
        assert_eq!(b.tokens(), 250.0);
        b.fill(0.0005, false);
        assert_eq!(b.tokens(), 250.5);
        b.fill(10.0, false);
        assert_eq!(b.tokens(), 500.0);
        b.take(600.0);
        assert_eq!(b.tokens(), -100.0);
        b.credit(700.0);
        assert_eq!(b.tokens(), 600.0);
        let mut u = TokenBucket::new(None, 500.0);
        u.take(1e12);
        u.take_to_empty(1e12);
        u.fill(1.0, true);
        assert!(u.tokens().is_infinite());
    }
}

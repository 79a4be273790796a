//! # l4s-fwd (skeleton; being built)

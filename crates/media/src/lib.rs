//! # l4s-media (skeleton; being built)

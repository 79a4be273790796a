//! # l4s-live (skeleton; being built)

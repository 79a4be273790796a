//! # l4s-apps (skeleton; being built)

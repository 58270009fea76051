//! The guard proxy (B17), run as the real binary.

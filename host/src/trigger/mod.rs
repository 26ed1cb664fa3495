//! Triggers other than HTTP that Spin builds in: what runs a component
//! besides a request (`redis`: a message on a channel). HTTP requests are
//! the `front`'s.

pub mod redis;

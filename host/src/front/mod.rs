//! The HTTP side of a request, before and after its component runs: which route
//! and component it is for, the `spin-*` headers Spin adds, the body limits, the
//! admission queue, and the replies the host writes itself.

pub mod admission;
pub mod body_limit;
pub mod reply;
pub mod router;
pub mod routes_listing;
pub mod spin_headers;
pub mod well_known;

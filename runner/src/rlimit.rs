//! The open-files limit. The 10,000-user load scenario needs 10,000 sockets in
//! oha and as many in the server, both children of `spinbench compare`, and a
//! server started by hand needs one per connection too; so `spinbench` raises
//! its soft `RLIMIT_NOFILE` to the hard limit at start (children inherit it).

use std::io;

/// Raises the soft open-files limit to the hard one (or to the kernel's
/// `fs.nr_open` when the hard limit is unlimited); returns the soft limit now in force.
#[allow(
    unsafe_code,
    reason = "setrlimit(2) through libc; it reads only the struct given"
)]
pub fn raise_open_files() -> io::Result<u64> {
    let mut limit = get()?;
    if limit.rlim_cur < limit.rlim_max {
        let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(u64::MAX);
        limit.rlim_cur = limit.rlim_max.min(nr_open);
        // SAFETY: setrlimit reads the struct it is given and nothing else.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    open_files()
}

/// The soft open-files limit in force.
pub fn open_files() -> io::Result<u64> {
    Ok(get()?.rlim_cur)
}

#[allow(
    unsafe_code,
    reason = "getrlimit(2) through libc; it writes only the struct given"
)]
fn get() -> io::Result<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(limit)
}

#[cfg(test)]
mod tests {
    #[test]
    fn raises_to_the_hard_limit() {
        let soft = super::raise_open_files().unwrap();
        assert_eq!(super::open_files().unwrap(), soft);
        assert!(soft >= 1024, "{soft}");
    }
}

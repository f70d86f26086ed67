//! Processes a test looks for, and limits it sets for a child.

/// Processes whose command line or environment mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Zombies are gone for every purpose but the process table.
        if stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
        {
            continue;
        }
        let hay = |b: &[u8]| String::from_utf8_lossy(b).contains(needle);
        if hay(&cmd) || hay(&env) {
            out.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
    }
    out
}

/// `CAP_SYS_RESOURCE` of `linux/capability.h` (the libc crate lacks it).
const CAP_SYS_RESOURCE: libc::c_ulong = 24;

/// For `pre_exec`: sets the open-files limit to `soft`/`hard` and drops
/// `CAP_SYS_RESOURCE` from the bounding set, so that the program run, even
/// as root, cannot raise its hard limit (as an unprivileged user could
/// not). Plain system calls, safe between fork and exec.
pub fn limit_open_files(soft: u64, hard: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit and prctl are plain system calls with live arguments.
    unsafe {
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Without CAP_SETPCAP (not root) the capability is not ours anyway.
        let _ = libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_RESOURCE, 0, 0, 0);
    }
    Ok(())
}

/// Asserts that exactly one line of `text` (a child's stderr) contains
/// `needle`: a condition said "in one line".
pub fn assert_one_line_with(text: &str, needle: &str) {
    let lines = text.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(lines, 1, "{needle} in {lines} lines: {text}");
}

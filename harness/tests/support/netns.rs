//! What a harness left in the network: its namespaces and veths.

use std::process::Command;

/// Our namespaces (`ip netns list`) and veths (`ip -o link show`, host
/// side) whose names carry `pid`.
pub fn leftovers(pid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for args in [&["netns", "list"][..], &["-o", "link", "show"][..]] {
        let out = Command::new("ip").args(args).output().expect("ip");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        found.extend(
            text.lines()
                .filter(|l| {
                    l.contains(&format!("slowlab-{pid}-")) || l.contains(&format!("sl{pid}-"))
                })
                .map(String::from),
        );
    }
    found
}

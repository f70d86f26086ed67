//! Lookups into a results directory's `environment.json` and the load
//! profile it records.

use crate::ResultSet;

impl ResultSet {
    /// A number from `environment.json` by a path of keys.
    pub fn env_f64(&self, path: &[&str]) -> Option<f64> {
        let mut v = &self.environment;
        for k in path {
            v = v.get(k)?;
        }
        v.as_f64()
    }

    /// A string from `environment.json` by a path of keys.
    pub fn env_str(&self, path: &[&str]) -> Option<String> {
        let mut v = &self.environment;
        for k in path {
            v = v.get(k)?;
        }
        v.as_str().map(str::to_string)
    }

    /// A sysctl triple such as `net.ipv4.tcp_wmem` (min, default, max).
    pub fn sysctl_triple(&self, name: &str) -> Option<[f64; 3]> {
        let t = catalogue::net::parse_triple(&self.env_str(&["sysctls", name])?)?;
        Some(t.map(|v| v as f64))
    }

    /// The load profile of the runs (the first preset's, as `reproduce`
    /// writes one per preset), as JSON.
    pub fn profile(&self) -> Option<&serde_json::Value> {
        let profiles = self.environment.get("run")?.get("profiles")?.as_object()?;
        let preset = self.runs.first().and_then(|r| r.preset.as_deref());
        preset
            .and_then(|p| profiles.get(p))
            .or_else(|| profiles.values().next())
    }

    /// A number of the load profile, e.g. `slow_rate`, or `body.large_bytes`.
    pub fn profile_f64(&self, path: &[&str]) -> Option<f64> {
        let mut v = self.profile()?;
        for k in path {
            v = v.get(k)?;
        }
        v.as_f64()
    }
}

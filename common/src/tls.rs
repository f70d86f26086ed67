//! The lab's TLS certificates: a certificate authority and a server
//! certificate for the loopback names, made fresh for each run (`rcgen`)
//! and written into the run's own directory. No private key is ever
//! committed; a key lives as long as the run's scratch directory.
//!
//! A proxy that terminates TLS gets [`CertFiles::cert`] and
//! [`CertFiles::key`]; the load generator trusts [`CertFiles::ca`]
//! (`slowlab load --tls-ca`), so every handshake is verified as a real
//! client's would be, against the names a lab target has.

use std::fs;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};

/// The names the server certificate is valid for: every loopback target
/// the lab sends load to.
pub const NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// A fresh authority and the server certificate it signed, in PEM.
#[derive(Clone)]
pub struct LabCertificate {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for LabCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a private key.
        f.write_str("LabCertificate { .. }")
    }
}

/// Where [`LabCertificate::write`] put the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertFiles {
    /// The authority's certificate: what a client trusts.
    pub ca: PathBuf,
    /// The server's certificate (PEM).
    pub cert: PathBuf,
    /// The server's private key (PEM, mode 0600).
    pub key: PathBuf,
}

/// The certificates could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("generating the lab's TLS certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("writing {0}: {1}")]
    Write(PathBuf, io::Error),
}

impl LabCertificate {
    /// A new authority ("slowlab lab CA") and a server certificate for
    /// [`NAMES`] signed by it, with new ECDSA P-256 keys.
    pub fn generate() -> Result<LabCertificate, TlsError> {
        let ca_key = KeyPair::generate()?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.distinguished_name
            .push(DnType::CommonName, "slowlab lab CA (one run)");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = ca.self_signed(&ca_key)?;
        let key = KeyPair::generate()?;
        let mut leaf = CertificateParams::new(NAMES.map(String::from).to_vec())?;
        leaf.distinguished_name
            .push(DnType::CommonName, "slowlab lab server");
        let leaf = leaf.signed_by(&key, &ca, &ca_key)?;
        Ok(LabCertificate {
            ca_pem: ca.pem(),
            cert_pem: leaf.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Writes `ca.pem`, `cert.pem` and `key.pem` (mode 0600) into `dir`,
    /// which must exist.
    pub fn write(&self, dir: &Path) -> Result<CertFiles, TlsError> {
        let files = CertFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        let put = |path: &Path, text: &str, mode: u32| {
            fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(mode)
                .open(path)
                .and_then(|mut f| io::Write::write_all(&mut f, text.as_bytes()))
                .map_err(|e| TlsError::Write(path.to_path_buf(), e))
        };
        put(&files.ca, &self.ca_pem, 0o644)?;
        put(&files.cert, &self.cert_pem, 0o644)?;
        put(&files.key, &self.key_pem, 0o600)?;
        Ok(files)
    }

    /// Generates and writes in one step.
    pub fn generate_into(dir: &Path) -> Result<CertFiles, TlsError> {
        Self::generate()?.write(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_call_makes_new_keys_and_the_key_file_is_private() {
        let a = LabCertificate::generate().unwrap();
        let b = LabCertificate::generate().unwrap();
        assert_ne!(a.key_pem, b.key_pem);
        assert!(a.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(a.key_pem.contains("PRIVATE KEY"));
        assert_eq!(format!("{a:?}"), "LabCertificate { .. }");
        let dir = std::env::temp_dir().join(format!("slowlab-tls-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let files = a.write(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&files.key).unwrap().permissions().mode() & 0o777;
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(mode, 0o600);
    }
}

//! The crates stand in layers and every arrow points down: a crate depends
//! only on crates of lower layers (a test may also use a crate of its own
//! layer, as `loadgen`'s and `proxy`'s tests use `server` as a real
//! origin), so no crate imports one that dispatches it and no cycle can
//! form. Read from `cargo metadata`, so a new `[dependencies]` line that
//! points up fails here.

use std::collections::BTreeMap;
use std::process::Command;

/// The layers, from the bottom. A new crate gets its layer here.
const LAYERS: &[&[&str]] = &[
    &["common"],
    &["catalogue", "testkit"],
    &["schema"],
    &["server", "proxy", "loadgen", "analysis"],
    &["report", "lab"],
    &["harness"],
];

fn layer_of(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&name))
}

#[test]
fn every_dependency_between_the_workspace_s_crates_points_down() {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let members: Vec<&str> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    let mut arrows: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in meta["packages"].as_array().expect("packages") {
        let from = p["name"].as_str().expect("name");
        let own = layer_of(from).unwrap_or_else(|| panic!("{from} has no layer in LAYERS"));
        for d in p["dependencies"].as_array().expect("dependencies") {
            let to = d["name"].as_str().expect("name");
            if !members.contains(&to) {
                continue;
            }
            let dev = d["kind"].as_str() == Some("dev");
            let theirs = layer_of(to).unwrap_or_else(|| panic!("{to} has no layer in LAYERS"));
            assert!(
                theirs < own || (dev && theirs == own && to != from),
                "{from} (layer {own}) depends on {to} (layer {theirs}){}",
                if dev { " for its tests" } else { "" }
            );
            assert!(
                to != "testkit" || dev,
                "{from} depends on testkit outside its tests"
            );
            arrows.entry(from.into()).or_default().push(to.into());
        }
    }
    // Every crate of the workspace is placed.
    for m in &members {
        assert!(layer_of(m).is_some(), "{m} has no layer");
    }
    assert!(arrows["harness"].iter().any(|t| t == "lab"), "{arrows:?}");
}

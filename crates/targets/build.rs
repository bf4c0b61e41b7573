//! Records the versions of the storage engines linked in, from the workspace's Cargo.lock, so
//! run records name the exact engine measured (`DYNO_VERSION_REDB`, `DYNO_VERSION_HEED`).

fn main() {
    let lock = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    for name in ["redb", "heed"] {
        let version = text
            .split("[[package]]")
            .find_map(|block| {
                let mut lines = block.lines().map(str::trim);
                let has_name = lines.any(|l| l == format!("name = \"{name}\""));
                let v = block
                    .lines()
                    .map(str::trim)
                    .find_map(|l| l.strip_prefix("version = \""))?;
                has_name.then(|| v.trim_end_matches('"').to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        println!(
            "cargo:rustc-env=DYNO_VERSION_{}={version}",
            name.to_uppercase()
        );
    }
}

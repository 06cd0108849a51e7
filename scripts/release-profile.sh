#!/usr/bin/env bash
# Keeps the shipped binary small (issue 29). By default it checks, in seconds, what decides the
# size, so that CI can run it on every change:
#   1. the release profile carries no debug info: in Cargo.toml, `debug` under
#      [profile.release] is absent, 0 or false (or `strip` removes it), and neither a
#      .cargo/config.toml nor a CARGO_PROFILE_RELEASE_DEBUG variable turns it back on;
#   2. `arrowsmith sql` (DataFusion) and URLs (`remote`: object_store) are default features of
#      the CLI that --no-default-features leaves out: no datafusion or object_store crate in
#      `cargo tree -p arrowsmith-cli --no-default-features`.
# With --build it also builds that conversion-only CLI in release and fails if the binary,
# stripped, is over 25 MB (about 5 minutes from clean on two cores; CI runs it); --build-full
# does the same for the default CLI (with `sql`) against 80 MB, a build of about 14 minutes
# there, which CI's budget leaves out (docs/performance.md, "Build and binary").
#
#   scripts/release-profile.sh                # the settings
#   scripts/release-profile.sh --build        # + conversion-only release binary <= 25 MB (CI)
#   scripts/release-profile.sh --build-full   # + default release binary <= 80 MB
set -euo pipefail
cd "$(dirname "$0")/.."

python3 - <<'PY'
import os
import pathlib
import sys
import tomllib


def no_debug_info(profile, where):
    debug = profile.get("debug", False)
    strip = profile.get("strip", False)
    stripped = strip in (True, "debuginfo", "symbols")
    if debug not in (False, 0, "none") and not stripped:
        sys.exit(f"release-profile: {where} sets debug = {debug!r} for release builds; "
                 "the shipped binary must have no debug info: use the `profiling` profile")


manifest = tomllib.loads(pathlib.Path("Cargo.toml").read_text())
profiles = manifest.get("profile", {})
no_debug_info(profiles.get("release", {}), "Cargo.toml [profile.release]")
for package, settings in profiles.get("release", {}).get("package", {}).items():
    no_debug_info(settings, f"Cargo.toml [profile.release.package.{package!r}]")
config = pathlib.Path(".cargo/config.toml")
if config.exists():
    no_debug_info(tomllib.loads(config.read_text()).get("profile", {}).get("release", {}),
                  ".cargo/config.toml [profile.release]")
if os.environ.get("CARGO_PROFILE_RELEASE_DEBUG", "false") not in ("", "0", "false", "none"):
    sys.exit("release-profile: CARGO_PROFILE_RELEASE_DEBUG turns debug info on")
profiling = profiles.get("profiling", {})
if profiling.get("inherits") != "release" or profiling.get("debug", 0) in (0, False, "none"):
    sys.exit("release-profile: [profile.profiling] should be the release build with debug info "
             "(inherits = \"release\", debug = 1)")

cli = tomllib.loads(pathlib.Path("cli/Cargo.toml").read_text())
for feature in ("sql", "remote"):
    if feature not in cli.get("features", {}).get("default", []):
        sys.exit(f"release-profile: `{feature}` is not a default feature of cli/Cargo.toml")
print("release-profile: [profile.release] has no debug info; `sql` and `remote` are default "
      "CLI features")
PY

if cargo tree -p arrowsmith-cli --no-default-features -e normal,build --prefix none --locked \
    | grep -q '^datafusion'; then
    echo "release-profile: the CLI without default features still depends on DataFusion:" >&2
    cargo tree -p arrowsmith-cli --no-default-features -e normal,build --locked -i datafusion >&2
    exit 1
fi
if cargo tree -p arrowsmith-cli --no-default-features -e normal,build --prefix none --locked \
    | grep -q '^object_store'; then
    echo "release-profile: the CLI without default features still depends on object_store:" >&2
    cargo tree -p arrowsmith-cli --no-default-features -e normal,build --locked -i object_store >&2
    exit 1
fi
echo "release-profile: the CLI without default features compiles no DataFusion and no object_store"

size_check() {
    local limit_mb=$1
    shift
    local t0=$SECONDS
    cargo build --release --locked -p arrowsmith-cli --bin arrowsmith "$@"
    local target_dir
    target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c \
        'import json, sys; print(json.load(sys.stdin)["target_directory"])')
    local stripped
    stripped=$(mktemp)
    strip -o "$stripped" "$target_dir/release/arrowsmith"
    local bytes
    bytes=$(stat -c %s "$stripped")
    rm -f "$stripped"
    echo "release-profile: arrowsmith $* built in $((SECONDS - t0)) s;" \
        "$(stat -c %s "$target_dir/release/arrowsmith") bytes as built, $bytes stripped"
    if [ "$bytes" -gt $((limit_mb * 1000 * 1000)) ]; then
        echo "release-profile: the stripped binary is over $limit_mb MB" >&2
        exit 1
    fi
}

case "${1:-}" in
"") ;;
--build) size_check 25 --no-default-features ;;
--build-full) size_check 80 ;;
*)
    echo "usage: scripts/release-profile.sh [--build | --build-full]" >&2
    exit 2
    ;;
esac

# isolated-vm's compiled addon, kept in the user cache so that later installs on this machine (a second clone,
# a changed lockfile) reuse it instead of compiling its C++ again (a few minutes). Sourced by lib.sh.
#
# isolated-vm installs with `prebuild-install || node-gyp rebuild`. Before downloading, prebuild-install looks
# for a local prebuild: a tarball named like the download, {name}-v{version}-{runtime}-v{abi}-{platform}{libc}-{arch}.tar.gz,
# in the folder that npm_config_isolated_vm_local_prebuilds names (its util.js, localPrebuild). It unpacks it
# into the package, checks that the addon loads in this Node, and only if one of those fails does node-gyp
# compile. The tarball holds out/isolated_vm.node: where isolated-vm.js loads the addon from (binding.gyp
# copies the build there, and node-gyp clean then removes build/).

IVM_PREBUILDS="$CACHE_DIR/prebuilds"

# The tarball's name for this Node and the isolated-vm installed (else the lockfile's, before the install),
# filled in as prebuild-install's rc.js and util.js do: runtime "node", abi process.versions.modules, libc ""
# on glibc and "musl" on other Linux. E.g. isolated-vm-v5.0.4-node-v115-linux-x64.tar.gz. Empty if the
# lockfile has no isolated-vm.
ivm_prebuild_name() {
  node -p '
    const fs = require("node:fs"), root = process.argv[1];
    const installed = root + "/node_modules/isolated-vm/package.json";
    const version = fs.existsSync(installed) ? require(installed).version
      : require(root + "/package-lock.json").packages?.["node_modules/isolated-vm"]?.version;
    const libc = process.platform === "linux" && !process.report.getReport().header.glibcVersionRuntime ? "musl" : "";
    version ? `isolated-vm-v${version}-node-v${process.versions.modules}-${process.platform}${libc}-${process.arch}.tar.gz` : ""
  ' "$ROOT" 2>/dev/null || true  # a cache never stops the setup
}

# What the coming `npm install` does with isolated-vm, for its log line: "cached" (a kept build will be
# unpacked), "compile" (none kept, none installed: node-gyp compiles it) or "" (already installed).
ivm_install_plan() {
  local name
  name=$(ivm_prebuild_name)
  if [ -n "$name" ] && [ -f "$IVM_PREBUILDS/$name" ]; then
    echo cached
  elif [ -n "$name" ] && [ ! -f "$ROOT/node_modules/isolated-vm/out/isolated_vm.node" ]; then
    echo compile
  fi
}

# Keep the installed addon as the local prebuild of later installs. `after-install`: replace a kept tarball
# that differs (prebuild-install refused it and node-gyp compiled a new one); otherwise only fill a gap, so a
# checkout installed before this cache existed seeds it on its next start.
ivm_keep_build() {
  local addon="$ROOT/node_modules/isolated-vm/out/isolated_vm.node" name tarball tmp
  [ -f "$addon" ] || return 0
  name=$(ivm_prebuild_name)
  [ -n "$name" ] || return 0
  tarball="$IVM_PREBUILDS/$name"
  if [ -f "$tarball" ]; then
    [ "${1:-}" = after-install ] || return 0
    tar -xOzf "$tarball" out/isolated_vm.node 2>/dev/null | cmp -s - "$addon" && return 0
  fi
  # Only an addon that loads in this Node is kept (node_modules may predate a Node upgrade, a new ABI).
  node -e 'require(process.argv[1])' "$addon" 2>/dev/null || return 0
  mkdir -p "$IVM_PREBUILDS"
  tmp="$tarball.$$.tmp"
  if tar -czf "$tmp" -C "$ROOT/node_modules/isolated-vm" out/isolated_vm.node && mv -f "$tmp" "$tarball"; then
    log "kept the compiled isolated-vm in $tarball: later installs on this machine reuse it"
  else
    rm -f "$tmp"
    log "warning: could not keep the compiled isolated-vm in $IVM_PREBUILDS"
  fi
}

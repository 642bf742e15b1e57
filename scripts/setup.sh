#!/usr/bin/env bash
# Install what the lab needs, idempotently and quickly when everything is there:
#   system packages (apt-get), uv, and the pinned Python environment in .venv/.
set -euo pipefail
cd "$(dirname "$0")/.."

# fio and zfs-fuse: the device baseline and zfs targets (zfs-fuse is used only where the kernel has no zfs module);
# gcc, pkg-config and libfuse3-dev: the emulated disk's daemon (device_profile: hdd), built below (not the fuse3
# package: its fusermount3 conflicts with zfs-fuse's fuse, and the lab mounts as root without it)
APT_PACKAGES=(postgresql postgresql-contrib sysbench btrfs-progs xfsprogs btrfs-compsize poppler-utils util-linux fio zfs-fuse
  gcc pkg-config libfuse3-dev)
# `make setup-slurm` (and `make test`, whose one-node Slurm test needs them): Slurm's daemons, client and
# munge. A real cluster's submit host already has its site's Slurm client: `make run EXECUTOR=slurm` needs
# only `sbatch`/`squeue` there, not these packages.
if [ "${WITH_SLURM:-0}" = 1 ]; then APT_PACKAGES+=(slurm-wlm munge); fi
need_bin() { command -v "$1" >/dev/null 2>&1; }

# one dpkg-query for all of them (this runs before every `make run`, also one with nothing to do)
installed=" $( (dpkg-query -W -f='${Package} ${Status}\n' "${APT_PACKAGES[@]}" 2>/dev/null || true) | awk '/install ok installed/ {printf "%s ", $1}')"
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  [[ "$installed" == *" $pkg "* ]] || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing system packages: ${missing[*]} (run as root, or install them yourself)" >&2
    exit 1
  fi
  echo "setup: installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian starts a default cluster when it installs postgresql; the lab runs its own clusters.
if need_bin systemctl && systemctl is-active --quiet postgresql 2>/dev/null; then
  systemctl stop postgresql || true
fi

PY=${PYTHON:-python3}
if ! need_bin uv && ! "$PY" -m uv --version >/dev/null 2>&1; then
  echo "setup: installing uv"
  "$PY" -m pip install --quiet uv
fi
UV="uv"; need_bin uv || UV="$PY -m uv"

# The pinned environment (requirements.lock), then the lab itself in editable mode (its `pgfslab`
# command and `import pgfslab` from any directory, notebooks included). Redone only when the lock or
# pyproject.toml changed.
# --compile-bytecode: every module compiled once here. Python never writes a .pyc where
# PYTHONDONTWRITEBYTECODE is set (CI images, containers often set it), and uv installs none by default: then
# every process compiles every module it imports from source, each time (most of Snakemake's start-up). The
# layout version below redoes an environment made before this.
stamp=.venv/.lock-sha256
want=$( (cat requirements.lock pyproject.toml; echo "venv layout 2: bytecode compiled") | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ ! -x .venv/bin/pgfslab ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: creating .venv from requirements.lock, pgfs-lab installed editable"
  [ -x .venv/bin/python ] || $UV venv --quiet --python "$PY" .venv
  $UV pip sync --quiet --compile-bytecode --python .venv/bin/python requirements.lock
  $UV pip install --quiet --compile-bytecode --python .venv/bin/python --no-deps --editable .
  echo "$want" > "$stamp"
fi
# the lab's own modules too (editable: a module edited later is compiled again in memory, correctly, until
# the next setup writes its .pyc), when one changed since the last time (the stamp is set first: a module
# edited while this compiles is compiled again next time)
compiled=.venv/.compiled
if [ ! -e "$compiled" ] || [ -n "$(find pgfslab benchmarks -name '*.py' -newer "$compiled" -print -quit)" ]; then
  touch "$compiled"
  .venv/bin/python -m compileall -q -j 0 pgfslab benchmarks >/dev/null || true
fi
# the emulated disk's daemon, built once per version of its source (.cache/bin/pgfslab-disk-<hash>)
.venv/bin/python -c "from pgfslab.host import disk_daemon; disk_daemon.binary()"
echo "setup: ok ($(.venv/bin/python --version), $(ls /usr/lib/postgresql/ | sort -n | tail -1 | sed 's/^/PostgreSQL /'))"

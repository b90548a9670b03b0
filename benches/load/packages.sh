# Sourced by the load scripts: `need COMMAND PACKAGE...` pairs, then `install_needed` installs
# the Debian packages of the commands that are missing (with sudo when not root).
missing=()
need() {
  command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || missing+=("$2")
}
install_needed() {
  [ ${#missing[@]} -gt 0 ] || return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

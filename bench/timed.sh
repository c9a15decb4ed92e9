# Sourced by the ingest benchmarks.
# timed OUT COMMAND...: runs COMMAND under /usr/bin/time (apt-get install time) with its output
# in OUT, sampling the peak RssAnon of the process it starts every 0.1 s (RSS would count the
# memory-mapped database); prints the wall and CPU times and that peak.
timed() {
  local out=$1 pid child peak=0 anon
  shift
  # The run before (and the removal of its datadir) may leave dirty pages the kernel would
  # write back during this one: flush them first, so that no run pays for the one before it.
  sync
  /usr/bin/time -f '%e s wall, %U s user + %S s system CPU' -o "$out.time" "$@" >"$out" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    child=$(pgrep -P "$pid" | head -1 || true)
    anon=$(awk '/^RssAnon:/ {print $2}' "/proc/${child:-$pid}/status" 2>/dev/null || echo 0)
    [ "${anon:-0}" -gt "$peak" ] && peak=$anon
    sleep 0.1
  done
  wait "$pid"
  echo "$(cat "$out.time"); peak RssAnon: $((peak / 1024)) MB"
}

"""wrk's latencies ("812.33us", "1.20ms", "2.01s") as microseconds and back, shared by the
summaries of bench/serve.sh and bench/trace.sh (`from bench.wrk_latency import micros, show`,
run from the repository's root with `python3 -B`, which leaves no __pycache__ in bench/).
"""


def micros(text):
    for unit, scale in (("us", 1), ("ms", 1e3), ("s", 1e6)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise ValueError(text)


def show(us):
    return f"{us:.0f}us" if us < 1000 else f"{us / 1000:.2f}ms"

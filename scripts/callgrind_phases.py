#!/usr/bin/env python3
"""Splits a callgrind profile's instructions (Ir) into the phases of a request,
per request when given the number of requests the profile counted. How the
profiles are made: docs/performance.md, "Where a hello request's time goes".

Usage: callgrind_phases.py PROFILE RULES [REQUESTS]

RULES is a text file, one rule a line, first match wins:
    <phase> | fn  | <regex on the function name>
    <phase> | src | <regex on the source file> | <first line>-<last line>
A `src` rule claims the instructions of those source lines, and the calls made
from them, whichever function they were inlined into (needs line tables:
`--dump-line=yes`, the default). A `fn` rule claims a function, with what it
calls. Every other function's cost goes where its callers' costs go, in
proportion to what each caller edge cost (gprof's assumption: exact for a
function called from one phase only). What no rule reaches is `unattributed`.
"""

import re
import sys
from collections import defaultdict

UNATTRIBUTED = "unattributed (runtime, I/O driver, threads)"


def parse(path):
    """Returns (self_cost[(fn, file, line)], calls[(fn, file, line, callee)] -> (count, incl),
    names of fns) from a callgrind out file with `events: Ir`."""
    names = {"fl": {}, "fn": {}}
    self_cost = defaultdict(int)
    calls = defaultdict(lambda: [0, 0])
    fn = file = cfn = cur_fl = None
    last_line = 0
    pending_call = None

    def name(kind, rest):
        m = re.match(r"\((\d+)\)(?: (.*))?", rest)
        if not m:
            return rest
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind][m.group(1)]

    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line or line[0] == "#":
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                pos = parts[0]
                if pos == "*":
                    ln = last_line
                elif pos[0] in "+-":
                    ln = last_line + int(pos)
                else:
                    ln = int(pos)
                last_line = ln
                cost = int(parts[1]) if len(parts) > 1 else 0
                if pending_call is not None:
                    entry = calls[(fn, file, ln, pending_call[0])]
                    entry[0] += pending_call[1]
                    entry[1] += cost
                    pending_call = None
                else:
                    self_cost[(fn, file, ln)] += cost
                continue
            key, _, rest = line.partition("=")
            if key == "fn":
                fn = name("fn", rest)
                file = cur_fl
            elif key == "fl":
                cur_fl = name("fl", rest)
                file = cur_fl
            elif key in ("fi", "fe"):
                file = name("fl", rest)
            elif key in ("cfi", "cfl"):
                name("fl", rest)
            elif key == "cfn":
                cfn = name("fn", rest)
            elif key == "calls":
                pending_call = (cfn, int(rest.split()[0]))
    return self_cost, calls


def load_rules(path):
    rules = []
    for raw in open(path):
        raw = raw.strip()
        if not raw or raw.startswith("#"):
            continue
        parts = [p.strip() for p in raw.split(" | ")]
        if parts[1] == "fn":
            rules.append((parts[0], "fn", re.compile(parts[2]), None))
        else:
            lo, hi = (int(x) for x in parts[3].split("-"))
            rules.append((parts[0], "src", re.compile(parts[2]), (lo, hi)))
    return rules


def main():
    profile, rules_path = sys.argv[1], sys.argv[2]
    requests = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    self_cost, calls = parse(profile)
    rules = load_rules(rules_path)
    fns = {k[0] for k in self_cost} | {k[0] for k in calls} | {k[3] for k in calls}

    fn_phase = {}
    for f in fns:
        for phase, kind, rx, _ in rules:
            if kind == "fn" and rx.search(f or ""):
                fn_phase[f] = phase
                break

    src_rules = [r for r in rules if r[1] == "src"]

    def site_phase(file, ln):
        for phase, _, rx, (lo, hi) in src_rules:
            if lo <= ln <= hi and rx.search(file or ""):
                return phase
        return None

    # Each call edge's phase, when its call site or caller fixes it.
    incoming = defaultdict(list)  # callee -> [(caller, fixed_phase or None, incl)]
    for (f, file, ln, callee), (_, incl) in calls.items():
        if callee == f:
            continue  # recursion adds nothing new
        incoming[callee].append((f, site_phase(file, ln) or fn_phase.get(f), incl))

    # d[f]: how f's cost splits over phases; fixed for rule functions, else the
    # mix of its callers', weighted by edge cost; iterated to a fixed point.
    d = {f: {fn_phase[f]: 1.0} for f in fn_phase}
    free = [f for f in fns if f not in fn_phase]
    for f in free:
        d[f] = {UNATTRIBUTED: 1.0}
    for _ in range(60):
        changed = 0.0
        for f in free:
            edges = incoming.get(f)
            if not edges:
                continue
            total = sum(e[2] for e in edges)
            if total == 0:
                continue
            mix = defaultdict(float)
            for caller, fixed, incl in edges:
                w = incl / total
                if fixed:
                    mix[fixed] += w
                else:
                    for p, share in d[caller].items():
                        mix[p] += w * share
            old = d[f]
            changed += sum(abs(mix[p] - old.get(p, 0.0)) for p in set(mix) | set(old))
            d[f] = dict(mix)
        if changed < 1e-9:
            break

    totals = defaultdict(float)
    for (f, file, ln), cost in self_cost.items():
        p = site_phase(file, ln)
        if p:
            totals[p] += cost
        else:
            for phase, share in d[f].items():
                totals[phase] += cost * share
    grand = sum(totals.values())
    order = [r[0] for r in rules]
    seen = []
    for p in order + [UNATTRIBUTED]:
        if p not in seen and p in totals:
            seen.append(p)
    for p in sorted(totals, key=lambda p: seen.index(p) if p in seen else 999):
        print(f"{totals[p] / requests:12,.0f}  {100 * totals[p] / grand:5.1f} %  {p}")
    print(f"{grand / requests:12,.0f}  100.0 %  total")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generates golden.json: reference sun and moon events from PyEphem.

PyEphem (https://rhodesmill.org/pyephem/, `pip install ephem`, tested with 4.2.1)
wraps XEphem's libastro: VSOP87 for the Sun (Earth), ELP 2000-82 for the Moon,
IAU 1980 nutation, aberration, its own Delta T table, and topocentric
positions for an observer on the WGS ellipsoid. That is independent of the
Meeus series and the polynomial Delta T that suntimes uses, and about two
orders of magnitude more precise than the bar (1-2 minutes).

How each event is defined (matching what suntimes promises):
  * observer at sea level, `pressure = 0` (PyEphem's own refraction off) and
    the standard 34' of refraction put into the horizon instead;
  * sunrise/sunset and moonrise/moonset: `horizon = '-0:34'`, upper limb
    (PyEphem's default `use_center=False` adds the body's apparent radius);
    the Moon's position is topocentric, so its parallax is included;
  * twilight: `horizon = '-6' / '-12' / '-18'`, `use_center=True`;
  * noon: `next_transit(Sun)` (upper culmination on the local meridian);
  * moon phase at 12:00 local time: `moon_phase` (illuminated fraction), age
    since `previous_new_moon`, and the phase name by the crate's documented
    rule (a principal phase whose instant falls in the local date, else the
    intermediate name between the principal phases around local noon).

Each case is one local calendar date in a zone. Every event of each kind in
[local midnight, next local midnight) is listed, as Unix seconds (floats), in
order. PyEphem's rise/set search covers one circuit of the sky from a start
date, so the script starts a search every two hours across the day and keeps
the distinct events that fall in the day. When a kind has no event, the
`state` of that threshold says whether the body stayed above it all day
("above"), below it all day ("below"), or crossed it in the other direction
only ("crosses"), sampled every 5 minutes.

Cases: hand-picked named places (both hemispheres, equator, the date line,
DST change days, Tromso and Longyearbyen in June and December, moon edge
cases, dates near 1900 and 2100) plus a seeded random sweep of |lat| <= 65
across 1900-2100 with a fixed offset near the longitude's solar time.

Run: python3 make_golden.py > golden.json   (deterministic: fixed seed)
"""
import datetime as dt
import json
import math
import random
import sys
from zoneinfo import ZoneInfo

import ephem

UNIX_EPOCH_AS_EPHEM = 25567.5  # ephem.Date('1970/1/1') (days since 1899-12-31 12:00 UT)


def to_unix(d):
    return round((float(d) - UNIX_EPOCH_AS_EPHEM) * 86400.0, 3)


def to_ephem(unix):
    return ephem.Date(unix / 86400.0 + UNIX_EPOCH_AS_EPHEM)


def zone(tz):
    if tz == "UTC":
        return dt.timezone.utc
    if tz[0] in "+-":
        sign = 1 if tz[0] == "+" else -1
        h, m = tz[1:].split(":")
        return dt.timezone(sign * dt.timedelta(hours=int(h), minutes=int(m)))
    return ZoneInfo(tz)


def local_day(date, tz):
    z = zone(tz)
    d = dt.date.fromisoformat(date)
    start = dt.datetime(d.year, d.month, d.day, tzinfo=z)
    nd = d + dt.timedelta(days=1)
    end = dt.datetime(nd.year, nd.month, nd.day, tzinfo=z)
    noon = dt.datetime(d.year, d.month, d.day, 12, tzinfo=z)
    return start.timestamp(), end.timestamp(), noon.timestamp()


def observer(lat, lon, horizon):
    o = ephem.Observer()
    o.lat, o.lon = str(lat), str(lon)
    o.elevation = 0
    o.pressure = 0
    o.horizon = horizon
    return o


def events(lat, lon, start, end, body, horizon, use_center, method):
    found = []
    t = start - 3600.0
    while t < end:
        o = observer(lat, lon, horizon)
        o.date = to_ephem(t)
        try:
            e = to_unix(getattr(o, method)(body, use_center=use_center))
        except (ephem.AlwaysUpError, ephem.NeverUpError):
            e = None
        if e is not None and start <= e < end and all(abs(e - f) > 60 for f in found):
            found.append(e)
        t += 7200.0
    return sorted(found)


def transits(lat, lon, start, end):
    found = []
    t = start - 3600.0
    while t < end:
        o = observer(lat, lon, "0")
        o.date = to_ephem(t)
        e = to_unix(o.next_transit(ephem.Sun()))
        if start <= e < end and all(abs(e - f) > 60 for f in found):
            found.append(e)
        t += 7200.0
    return sorted(found)


def state(lat, lon, start, end, body, horizon_deg, use_center):
    above = below = False
    o = observer(lat, lon, "0")
    t = start
    while t <= end:
        o.date = to_ephem(t)
        body.compute(o)
        alt = math.degrees(float(body.alt)) + (0 if use_center else math.degrees(float(body.radius)))
        if alt > horizon_deg:
            above = True
        else:
            below = True
        t += 300.0
    return "crosses" if above and below else ("above" if above else "below")


PRINCIPAL = [("new_moon", ephem.next_new_moon), ("first_quarter", ephem.next_first_quarter_moon),
             ("full_moon", ephem.next_full_moon), ("last_quarter", ephem.next_last_quarter_moon)]
BETWEEN = {"new_moon": "waxing_crescent", "first_quarter": "waxing_gibbous",
           "full_moon": "waning_gibbous", "last_quarter": "waning_crescent"}


def moon_phase(start, end, noon):
    d = to_ephem(noon)
    m = ephem.Moon(d)
    age = (float(d) - float(ephem.previous_new_moon(d)))
    name = None
    for n, f in PRINCIPAL:
        when = to_unix(f(to_ephem(start)))
        if start <= when < end:
            name = n
    if name is None:
        latest = max(((to_unix(getattr(ephem, "previous_" + f.__name__[5:])(d)), n) for n, f in PRINCIPAL))
        name = BETWEEN[latest[1]]
    return {"fraction": round(float(m.moon_phase), 5), "age_days": round(age, 4), "name": name}


def case(name, lat, lon, date, tz):
    start, end, noon = local_day(date, tz)
    sun, moon = ephem.Sun(), ephem.Moon()
    out = {"name": name, "lat": lat, "lon": lon, "date": date, "tz": tz, "events": {}, "state": {}}
    ev = out["events"]
    ev["sunrise"] = events(lat, lon, start, end, sun, "-0:34", False, "next_rising")
    ev["sunset"] = events(lat, lon, start, end, sun, "-0:34", False, "next_setting")
    ev["noon"] = transits(lat, lon, start, end)
    out["state"]["sun"] = state(lat, lon, start, end, sun, -34 / 60, False)
    for kind, deg in (("civil", 6), ("nautical", 12), ("astronomical", 18)):
        ev[kind + "_begin"] = events(lat, lon, start, end, sun, str(-deg), True, "next_rising")
        ev[kind + "_end"] = events(lat, lon, start, end, sun, str(-deg), True, "next_setting")
        out["state"][kind] = state(lat, lon, start, end, sun, -deg, True)
    ev["moonrise"] = events(lat, lon, start, end, moon, "-0:34", False, "next_rising")
    ev["moonset"] = events(lat, lon, start, end, moon, "-0:34", False, "next_setting")
    out["state"]["moon"] = state(lat, lon, start, end, moon, -34 / 60, False)
    out["moon_phase"] = moon_phase(start, end, noon)
    return out


NAMED = [
    ("London midsummer", 51.5074, -0.1278, "2024-06-21", "Europe/London"),
    ("London spring-forward day", 51.5074, -0.1278, "2024-03-31", "Europe/London"),
    ("London fall-back day", 51.5074, -0.1278, "2024-10-27", "Europe/London"),
    ("New York fall-back day", 40.7128, -74.0060, "2024-11-03", "America/New_York"),
    ("New York spring-forward day", 40.7128, -74.0060, "2024-03-10", "America/New_York"),
    ("Los Angeles", 34.0522, -118.2437, "2023-12-21", "America/Los_Angeles"),
    ("Kolkata", 22.5726, 88.3639, "2024-01-15", "Asia/Kolkata"),
    ("Kolkata fixed offset", 22.5726, 88.3639, "2024-01-15", "+05:30"),
    ("Sydney", -33.8688, 151.2093, "2024-06-21", "Australia/Sydney"),
    ("Sydney DST start", -33.8688, 151.2093, "2024-10-06", "Australia/Sydney"),
    ("Cape Town", -33.9249, 18.4241, "2024-12-21", "Africa/Johannesburg"),
    ("Ushuaia", -54.8019, -68.3030, "2024-06-21", "America/Argentina/Ushuaia"),
    ("Quito equator", -0.1807, -78.4678, "2024-03-20", "America/Guayaquil"),
    ("Equator Greenwich", 0.0, 0.0, "2000-01-01", "UTC"),
    ("Date line east", -17.0, 180.0, "2024-07-01", "+12:00"),
    ("Date line west", -17.0, -180.0, "2024-07-01", "-12:00"),
    ("Date line Kiribati", 1.87, -157.4, "2024-05-05", "Pacific/Kiritimati"),
    ("Fiji", -18.1248, 178.4501, "2025-01-10", "Pacific/Fiji"),
    ("Reykjavik midsummer", 64.1466, -21.9426, "2024-06-21", "Atlantic/Reykjavik"),
    ("Helsinki midsummer white night", 60.1699, 24.9384, "2024-06-21", "Europe/Helsinki"),
    ("Tromso June (polar day)", 69.6492, 18.9553, "2024-06-21", "Europe/Oslo"),
    ("Tromso December (polar night)", 69.6492, 18.9553, "2024-12-21", "Europe/Oslo"),
    ("Longyearbyen June", 78.2232, 15.6267, "2024-06-21", "Arctic/Longyearbyen"),
    ("Longyearbyen December", 78.2232, 15.6267, "2024-12-21", "Arctic/Longyearbyen"),
    ("McMurdo December", -77.85, 166.67, "2024-12-21", "Antarctica/McMurdo"),
    ("North pole March", 90.0, 0.0, "2024-03-01", "UTC"),
    ("South pole", -90.0, 0.0, "2024-06-01", "UTC"),
    ("Near 1900", 48.8566, 2.3522, "1900-01-01", "+00:09"),
    ("Near 2100", 35.6762, 139.6503, "2100-12-31", "+09:00"),
    ("Berlin 1900 summer", 52.52, 13.405, "1900-07-15", "UTC"),
    ("Santiago 2099", -33.4489, -70.6693, "2099-09-01", "-04:00"),
]

# Moon edge cases (no moonrise, no moonset, two in one local date), found by
# `make_golden.py --scan-moon` and similar scans, pinned here.
MOON_EDGE = [
    ("London no moonrise", 51.5074, -0.1278, "2024-01-03", "Europe/London"),
    ("London no moonset", 51.5074, -0.1278, "2024-01-17", "Europe/London"),
    ("Reykjavik two moonrises", 64.1466, -21.9426, "2024-07-02", "Atlantic/Reykjavik"),
    ("Reykjavik two moonsets", 64.1466, -21.9426, "2024-07-13", "Atlantic/Reykjavik"),
    ("Tromso two moonsets", 69.6492, 18.9553, "2024-06-17", "Europe/Oslo"),
    ("Tromso moon December", 69.6492, 18.9553, "2024-12-15", "Europe/Oslo"),
    ("Tromso moon December 2", 69.6492, 18.9553, "2024-12-01", "Europe/Oslo"),
]


def sweep(n, seed=20240621):
    rng = random.Random(seed)
    rows = []
    first, last = dt.date(1900, 1, 1).toordinal(), dt.date(2100, 12, 31).toordinal()
    for i in range(n):
        lat = round(rng.uniform(-65, 65), 4)
        lon = round(rng.uniform(-180, 180), 4)
        date = dt.date.fromordinal(rng.randint(first, last)).isoformat()
        hours = round(lon / 15)
        tz = "UTC" if hours == 0 else f"{'+' if hours > 0 else '-'}{abs(hours):02d}:00"
        rows.append((f"sweep {i}", lat, lon, date, tz))
    return rows


def main():
    extra = sys.argv[1:]
    if extra and extra[0] == "--scan-moon":
        scan_moon()
        return
    cases = [case(*c) for c in NAMED + MOON_EDGE + sweep(300)]
    json.dump({"generator": "make_golden.py with PyEphem " + ephem.__version__, "cases": cases},
              sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


def scan_moon():
    """Prints dates in 2024 at London with 0 moonrises or 2 moonsets (to pick MOON_EDGE)."""
    d = dt.date(2024, 1, 1)
    for i in range(366):
        day = (d + dt.timedelta(days=i)).isoformat()
        start, end, _ = local_day(day, "Europe/London")
        moon = ephem.Moon()
        r = events(51.5074, -0.1278, start, end, moon, "-0:34", False, "next_rising")
        s = events(51.5074, -0.1278, start, end, moon, "-0:34", False, "next_setting")
        if len(r) != 1 or len(s) != 1:
            print(day, len(r), len(s))


if __name__ == "__main__":
    main()

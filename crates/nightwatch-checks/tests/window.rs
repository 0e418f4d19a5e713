//! Maintenance windows: across midnight, across days, and never a panic.

use jiff::civil::Weekday::{self, *};
use nightwatch_checks::Window;
use proptest::prelude::*;

fn at(text: &str, day: Weekday, hh: u16, mm: u16) -> bool {
    let window: Window = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
    window.contains(day, hh * 60 + mm)
}

#[test]
fn windows_across_midnight_and_days() {
    // (window, day, hh, mm, inside?)
    let cases = [
        ("Sat 02:00-06:00", Saturday, 2, 0, true),
        ("Sat 02:00-06:00", Saturday, 5, 59, true),
        ("Sat 02:00-06:00", Saturday, 6, 0, false),
        ("Sat 02:00-06:00", Saturday, 1, 59, false),
        ("Sat 02:00-06:00", Sunday, 3, 0, false),
        // Every day, crossing midnight.
        ("22:00-06:00", Tuesday, 23, 30, true),
        ("22:00-06:00", Wednesday, 0, 0, true),
        ("22:00-06:00", Wednesday, 5, 59, true),
        ("22:00-06:00", Wednesday, 6, 0, false),
        ("22:00-06:00", Wednesday, 21, 59, false),
        // A day-scoped window crossing midnight runs into the next morning, not the previous.
        ("Fri 22:00-02:00", Friday, 23, 0, true),
        ("Fri 22:00-02:00", Saturday, 1, 59, true),
        ("Fri 22:00-02:00", Saturday, 2, 0, false),
        ("Fri 22:00-02:00", Friday, 1, 0, false),
        ("Fri 22:00-02:00", Saturday, 23, 0, false),
        // A weekday range crossing midnight: Friday night's tail lands on Saturday.
        ("Mon-Fri 22:00-06:00", Monday, 1, 0, false),
        ("Mon-Fri 22:00-06:00", Tuesday, 1, 0, true),
        ("Mon-Fri 22:00-06:00", Saturday, 5, 0, true),
        ("Mon-Fri 22:00-06:00", Saturday, 22, 0, false),
        ("Mon-Fri 22:00-06:00", Sunday, 1, 0, false),
        // A wrapping day range, whole days, lists, names in any case.
        ("Fri-Mon", Sunday, 12, 0, true),
        ("Fri-Mon", Wednesday, 12, 0, false),
        ("sat,SUNDAY 00:00-24:00", Sunday, 23, 59, true),
        ("sat,SUNDAY 00:00-24:00", Monday, 0, 0, false),
        ("Sun 23:00-1:00", Monday, 0, 30, true),
        ("Sun 23:00-1:00", Sunday, 0, 30, false),
        ("00:00-24:00", Thursday, 23, 59, true),
        ("12:00-12:01", Thursday, 12, 0, true),
        ("12:00-12:01", Thursday, 12, 1, false),
    ];
    for (text, day, hh, mm, inside) in cases {
        assert_eq!(
            at(text, day, hh, mm),
            inside,
            "{text} at {day:?} {hh:02}:{mm:02}"
        );
    }
}

#[test]
fn minutes_out_of_range_are_in_no_window() {
    let w: Window = "00:00-24:00".parse().expect("parses");
    assert!(!w.contains(Monday, 1440));
    assert!(!w.contains(Monday, u16::MAX));
}

const DAYS: [Weekday; 7] = [
    Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday,
];
const NAMES: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

fn clock(minute: u16) -> String {
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

proptest! {
    #[test]
    fn parsing_and_matching_never_panic(text in "\\PC{0,40}", day in 0usize..7, minute in any::<u16>()) {
        if let Ok(w) = text.parse::<Window>() {
            let _ = w.contains(DAYS[day], minute);
        }
    }

    #[test]
    fn window_like_garbage_never_panics(text in "[A-Za-z,\\- ]{0,12}[0-9:]{0,6}-?[0-9:]{0,6}", minute in any::<u16>()) {
        if let Ok(w) = text.parse::<Window>() {
            let _ = w.contains(Monday, minute);
        }
    }

    /// `A-B` holds at minute m exactly when m is in [A, B), wrapping past midnight when B <= A.
    #[test]
    fn window_holds_exactly_on_its_half_open_range(
        a in 0u16..1440,
        b in 1u16..=1440,
        m in 0u16..1440,
        day in 0usize..7,
    ) {
        prop_assume!(a != b);
        let end = if b == 1440 { "24:00".to_owned() } else { clock(b) };
        let w: Window = format!("{}-{end}", clock(a)).parse().expect("parses");
        let expected = if a < b { a <= m && m < b } else { m >= a || m < b };
        prop_assert_eq!(w.contains(DAYS[day], m), expected);
    }

    /// `D A-B` holds on day D from A, and when it wraps, on the day after D until B.
    #[test]
    fn day_window_holds_on_its_day_and_the_next_morning(
        on in 0usize..7,
        a in 0u16..1440,
        b in 1u16..1440,
        m in 0u16..1440,
        day in 0usize..7,
    ) {
        prop_assume!(a != b);
        let w: Window = format!("{} {}-{}", NAMES[on], clock(a), clock(b)).parse().expect("parses");
        let next = (on + 1) % 7;
        let expected = if a < b {
            day == on && a <= m && m < b
        } else {
            (day == on && m >= a) || (day == next && m < b)
        };
        prop_assert_eq!(w.contains(DAYS[day], m), expected);
    }
}

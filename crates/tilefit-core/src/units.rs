//! How numbers are written for people: byte counts with thousands separators and their KiB
//! value (NVIDIA's tables use KiB and call it KB), plain counts with separators. One place, so
//! every output says `101,376 bytes (99 KiB)` the same way.

/// `65536` -> `65,536`.
pub fn format_count(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count and its noun, singular for one: `1 launch`, `2 launches`, `1,024 stops`.
pub fn counted(count: u64, one: &str, many: &str) -> String {
    format!(
        "{} {}",
        format_count(count),
        if count == 1 { one } else { many }
    )
}

/// `101376` -> `101,376 bytes (99 KiB)`; `102656` -> `102,656 bytes (100.25 KiB)`.
pub fn format_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{} bytes", format_count(bytes));
    }
    format!("{} bytes ({})", format_count(bytes), format_kib(bytes))
}

/// `101376` -> `99 KiB`; `102656` -> `100.25 KiB`.
pub fn format_kib(bytes: u64) -> String {
    let whole = bytes / 1024;
    let rest = bytes % 1024;
    if rest == 0 {
        return format!("{whole} KiB");
    }
    // Two decimals, trailing zeros dropped: exact enough to tell 100 KiB from 100.25 KiB.
    let hundredths = (rest * 100).div_ceil(1024).min(99);
    let text = format!("{whole}.{hundredths:02}");
    format!("{} KiB", text.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_count_of_one_takes_the_singular() {
        assert_eq!(super::counted(1, "launch", "launches"), "1 launch");
        assert_eq!(super::counted(0, "launch", "launches"), "0 launches");
        assert_eq!(super::counted(1024, "stop", "stops"), "1,024 stops");
    }

    use super::*;

    #[test]
    fn counts_get_separators() {
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1024), "1,024");
        assert_eq!(format_count(232_448), "232,448");
        assert_eq!(format_count(1_000_000), "1,000,000");
    }

    #[test]
    fn bytes_show_kib() {
        assert_eq!(format_bytes(512), "512 bytes");
        assert_eq!(format_bytes(1024), "1,024 bytes (1 KiB)");
        assert_eq!(format_bytes(101_376), "101,376 bytes (99 KiB)");
        assert_eq!(format_bytes(102_656), "102,656 bytes (100.25 KiB)");
        assert_eq!(format_kib(102_400 + 512), "100.5 KiB");
    }
}

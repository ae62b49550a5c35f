//! Where something is in a file a user handed us, by line: a config file's entry, or a kernel's
//! decorator. The gate places its findings with these, so no renderer reads a file.

/// The 1-based line of a config file's entry (`"256": {`); none for an empty key.
pub fn entry_line(text: &str, key: &str) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
    let quoted = format!("\"{key}\"");
    text.lines()
        .position(|l| l.trim_start().starts_with(&quoted))
        .map(|i| i + 1)
}

/// The 1-based line of the decorator above `def function(`: `@triton.autotune` when `autotune`,
/// else `@triton.jit`; the `def` line itself when neither is there.
pub fn decorator_line(text: &str, function: &str, autotune: bool) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let def = lines.iter().position(|l| {
        l.trim_start()
            .strip_prefix("def ")
            .is_some_and(|rest| rest.trim_start().starts_with(&format!("{function}(")))
    })?;
    let wanted = if autotune { "autotune" } else { "jit" };
    (0..def)
        .rev()
        .take_while(|&i| !lines[i].trim_start().starts_with("def "))
        .find(|&i| lines[i].trim_start().starts_with('@') && lines[i].contains(wanted))
        .or(Some(def))
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str =
        "import triton\n\n@triton.autotune(configs=[])\n@triton.jit\ndef k(x):\n    pass\n";

    #[test]
    fn decorators_and_entries_by_line() {
        assert_eq!(decorator_line(KERNEL, "k", true), Some(3));
        assert_eq!(decorator_line(KERNEL, "k", false), Some(4));
        assert_eq!(decorator_line(KERNEL, "other", false), None);
        assert_eq!(decorator_line("def k(x):\n", "k", false), Some(1));
        let file = "{\n    \"1\": {\n    },\n    \"256\": {\n";
        assert_eq!(entry_line(file, "256"), Some(4));
        assert_eq!(entry_line(file, ""), None);
    }
}

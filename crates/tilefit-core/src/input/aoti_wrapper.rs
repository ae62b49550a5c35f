//! The kernel calls of an AOTInductor wrapper `.cpp` (as `torch/_inductor/codegen/
//! cpp_wrapper_gpu.py` writes them): each `X = loadKernel(BINARY, "NAME", SHARED, ...)` with the
//! `launchKernel(X, grid_0, grid_1, grid_2, NUM_WARPS, SHARED, ...)` of the same kernel, and the
//! kernel's Triton source in the comment before them. Text only; a call that does not parse is
//! an error naming its line.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// One kernel's calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The kernel's symbol.
    pub name: String,
    /// The line of `loadKernel`.
    pub line: usize,
    /// Dynamic shared memory: the largest of what `loadKernel` allows and every `launchKernel`
    /// of the kernel asks.
    pub shared_bytes: u64,
    /// Warps per block: the most any of its launches asks.
    pub num_warps: u64,
    /// The binary's path as written (`None`: embedded, `__K_start`).
    pub binary: Option<String>,
    /// `sm_80`, from `DeviceProperties(... cc=80 ...)` in the source comment.
    pub compiled_for: Option<String>,
    /// `num_stages`, `num_warps` and `BLOCK_*`/`GROUP_*`/`SPLIT_*` constants of the source.
    pub config: BTreeMap<String, Value>,
}

static LOAD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^[ \t]*([A-Za-z_][\w.]*)[ \t]*=[ \t]*loadKernel\(([^;]*)\)[ \t]*;")
        .expect("literal")
});
static STAGES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bnum_stages=(\d+)").expect("literal"));
static CC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"DeviceProperties\([^)]*\bcc=(\d+)").expect("literal"));
static CONSTANT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^\s*((?:BLOCK|GROUP|SPLIT|XBLOCK|YBLOCK|RBLOCK|R0_BLOCK)\w*)\s*:\s*tl\.constexpr\s*=\s*(\d+)")
        .expect("literal")
});

/// Every kernel's calls in `text`, in order.
pub fn calls(text: &str) -> Vec<Result<Call, String>> {
    LOAD.captures_iter(text)
        .map(|load| {
            let at = load.get(0).map_or(0, |m| m.start());
            let line = text[..at].matches('\n').count() + 1;
            call(text, &load[1], &load[2], at, line).map_err(|why| format!("line {line}: {why}"))
        })
        .collect()
}

fn call(text: &str, var: &str, args: &str, at: usize, line: usize) -> Result<Call, String> {
    let args = split_args(args);
    let [binary, name, shared, ..] = args.as_slice() else {
        return Err(format!(
            "`loadKernel` with {} arguments, not 3 or 4",
            args.len()
        ));
    };
    let binary = if binary.starts_with('"') {
        Some(literal(binary).ok_or("the binary's path is not a string literal")?)
    } else if binary.starts_with("__") && binary.ends_with("_start") {
        None
    } else {
        return Err(format!(
            "`loadKernel` of `{binary}`: neither a path nor `__K_start`"
        ));
    };
    let name = literal(name).ok_or("the kernel's name is not a string literal")?;
    let load_shared: u64 = shared
        .parse()
        .map_err(|_| format!("shared memory `{shared}` is not a number"))?;
    let launches = launch_args(text, var);
    if launches.is_empty() {
        return Err(format!("no `launchKernel({var}, ...)` for `{name}`"));
    }
    // Every launch of the kernel: the largest asks the most of a device.
    let (mut num_warps, mut launch_shared) = (0u64, 0u64);
    for launch in &launches {
        let [_, _, _, warps, shared, ..] = launch.as_slice() else {
            return Err(format!(
                "`launchKernel({var}, ...)` has {} arguments",
                launch.len() + 1
            ));
        };
        let warps: u64 = warps
            .parse()
            .map_err(|_| format!("num_warps `{warps}` is not a number"))?;
        let shared: u64 = shared
            .parse()
            .map_err(|_| format!("the launch's shared memory `{shared}` is not a number"))?;
        num_warps = num_warps.max(warps);
        launch_shared = launch_shared.max(shared);
    }
    let source = source_comment(text, at);
    let mut config = BTreeMap::new();
    for c in CONSTANT.captures_iter(source) {
        if let Ok(v) = c[2].parse::<u64>() {
            config.insert(c[1].to_owned(), Value::from(v));
        }
    }
    if let Some(stages) = STAGES
        .captures(source)
        .and_then(|c| c[1].parse::<u64>().ok())
    {
        config.insert("num_stages".to_owned(), Value::from(stages));
    }
    config.insert("num_warps".to_owned(), Value::from(num_warps));
    Ok(Call {
        name,
        line,
        shared_bytes: load_shared.max(launch_shared),
        num_warps,
        binary,
        compiled_for: CC.captures(source).map(|c| format!("sm_{}", &c[1])),
        config,
    })
}

/// The `/* ... */` comment that ends last before `at` (the kernel's source, which the generated
/// `call_` function opens with), or nothing.
fn source_comment(text: &str, at: usize) -> &str {
    let before = &text[..at];
    let Some(end) = before.rfind("*/") else {
        return "";
    };
    let Some(start) = before[..end].rfind("/*") else {
        return "";
    };
    &before[start..end]
}

/// The arguments after the kernel of every `launchKernel(var, ...)`.
fn launch_args(text: &str, var: &str) -> Vec<Vec<String>> {
    let pattern = format!(r"launchKernel\(\s*{}\s*,([^;]*)\)\s*;", regex::escape(var));
    Regex::new(&pattern).map_or_else(
        |_| Vec::new(),
        |found| {
            found
                .captures_iter(text)
                .map(|c| split_args(&c[1]))
                .collect()
        },
    )
}

/// Top-level, comma-separated arguments, trimmed (commas inside string literals and brackets
/// stay).
fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let (mut depth, mut quoted, mut escaped) = (0i32, false, false);
    for c in args.chars() {
        if quoted {
            current.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => quoted = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => quoted = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(current.trim().to_owned());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    out
}

/// A C++ string literal's text (simple escapes only).
fn literal(arg: &str) -> Option<String> {
    let inner = arg.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                other => out.push(other),
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRAPPER: &str = r#"
static inline void call_triton_tem_0(kernels_type_& kernels_, const std::optional<std::string>& cubin_dir_ = std::nullopt){
    /*
    @triton_heuristics.template(
    num_stages=5,
    num_warps=8,
    triton_meta={'device': DeviceProperties(type='cuda', index=0, cc=80, major=8, warp_size=32)},
    )
    @triton.jit
    def triton_tem_0(arg_A, arg_B, out_ptr1):
        BLOCK_M : tl.constexpr = 128
        BLOCK_N : tl.constexpr = 128
        BLOCK_K : tl.constexpr = 64
    */
    uint32_t grid_0 = 32;
    if (kernels_.triton_tem_0 == nullptr) {
        kernels_.triton_tem_0 = loadKernel("/tmp/build/c26.fatbin", "triton_tem_0", 131072, cubin_dir_);
    }
    launchKernel(kernels_.triton_tem_0, grid_0, grid_1, grid_2, 8, 131072, kernel_args_, stream_);
    launchKernel(kernels_.triton_tem_0, grid_0, grid_1, grid_2, 8, 139264, kernel_args_, stream_);
}
static inline void call_embedded(kernels_type_& kernels_){
    kernels_.k1 = loadKernel(__k1_start, "k1", 0);
    launchKernel(kernels_.k1, grid_0, grid_1, grid_2, 4, 0, kernel_args_, stream_);
    kernels_.k2 = loadKernel(__k2_start, "k2", 1024);
}
"#;

    #[test]
    fn loads_and_launches_are_read_with_the_source_s_config() {
        let calls = calls(WRAPPER);
        let first = calls[0].as_ref().unwrap();
        assert_eq!(first.name, "triton_tem_0");
        assert_eq!(first.shared_bytes, 139_264, "the larger launch");
        assert_eq!(first.num_warps, 8);
        assert_eq!(first.binary.as_deref(), Some("/tmp/build/c26.fatbin"));
        assert_eq!(first.compiled_for.as_deref(), Some("sm_80"));
        assert_eq!(first.config["BLOCK_K"], 64);
        assert_eq!(first.config["num_stages"], 5);
        assert_eq!(first.line, 17);
        let embedded = calls[1].as_ref().unwrap();
        assert_eq!((embedded.binary.as_ref(), embedded.num_warps), (None, 4));
        let missing = calls[2].as_ref().unwrap_err();
        assert!(
            missing.contains("no `launchKernel(kernels_.k2"),
            "{missing}"
        );
    }

    #[test]
    fn arguments_split_at_top_level_commas_only() {
        assert_eq!(
            split_args(r#""a,b\"c", f(x, y), 3"#),
            [r#""a,b\"c""#, "f(x, y)", "3"]
        );
        assert_eq!(literal(r#""a\"b""#).as_deref(), Some("a\"b"));
    }
}

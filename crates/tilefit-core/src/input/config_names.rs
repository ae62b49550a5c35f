//! An engine's config-file name, split the way the engines join it (vLLM's and SGLang's
//! `get_config_file_name`): `E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,
//! block_shape=[128, 128]_down.json` into its device, its shape and its variant parts, every byte
//! kept so that a name made for another device changes only the device.

/// What a config file's name says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NameParts {
    /// `device_name=`, underscores read as spaces.
    pub device_name: Option<String>,
    /// How many `device_name=` parts the name has: the engines write one; a name with more is
    /// no device's file (which one would it be?).
    pub device_name_parts: usize,
    /// `E=`, `N=` and the like: the shape the configs were tuned for.
    pub shape: Vec<(String, String)>,
    /// Everything else: the variant (`dtype=fp8_w8a8`, `block_shape=[128,128]`, `down`).
    pub variant: Vec<String>,
}

/// Name parts that give the shape rather than a kernel variant.
const SHAPE_KEYS: &[&str] = &["E", "N", "K", "M"];

/// A file name split the way the engines join it, every byte kept: the `,`-separated parts as
/// written (a list value such as `block_shape=[128, 128]` is one part), SGLang's `_down` suffix,
/// and the extension. [`NameSegments::join`] gives the name back byte for byte, so a name made
/// from another by changing one part keeps every other part, and the suffix, where it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameSegments {
    /// The parts, as written.
    pub parts: Vec<String>,
    /// `_down` (SGLang's down-projection configs), or empty.
    pub suffix: String,
    /// `.json`, or empty.
    pub extension: String,
}

impl NameSegments {
    /// Split a file name (no folder).
    pub fn of(file_name: &str) -> NameSegments {
        let (mut stem, extension) = match file_name.strip_suffix(".json") {
            Some(stem) => (stem, ".json"),
            None => (file_name, ""),
        };
        let mut suffix = "";
        if let Some(rest) = stem.strip_suffix("_down") {
            stem = rest;
            suffix = "_down";
        }
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0i32, 0usize);
        for (i, c) in stem.char_indices() {
            match c {
                '[' | '(' => depth += 1,
                // An unmatched closer is text: it opens nothing for a later `[` to close.
                ']' | ')' => depth = (depth - 1).max(0),
                ',' if depth == 0 => {
                    parts.push(stem[start..i].to_owned());
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(stem[start..].to_owned());
        NameSegments {
            parts,
            suffix: suffix.to_owned(),
            extension: extension.to_owned(),
        }
    }

    /// The name again.
    pub fn join(&self) -> String {
        format!("{}{}{}", self.parts.join(","), self.suffix, self.extension)
    }

    /// Where the `device_name=` parts are.
    pub fn device_parts(&self) -> Vec<usize> {
        self.parts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.trim().starts_with("device_name="))
            .map(|(i, _)| i)
            .collect()
    }
}

/// Split a file name the way the engines build it: `,`-separated `key=value` parts, where a
/// value may be a list (`block_shape=[128, 128]`, with or without the space), and SGLang's `_down`
/// suffix marks the down-projection configs. `block_shape=[128, 128]` and `[128,128]` are the
/// same part.
pub fn parse_name(file_name: &str) -> NameParts {
    let segments = NameSegments::of(file_name);
    let mut name = NameParts::default();
    for part in segments
        .parts
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
    {
        match part.split_once('=') {
            Some(("device_name", device)) => {
                name.device_name_parts += 1;
                let device = device.replace('_', " ").trim().to_owned();
                if !device.is_empty() && name.device_name.is_none() {
                    name.device_name = Some(device);
                }
            }
            Some((key, value)) if SHAPE_KEYS.contains(&key) => {
                name.shape.push((key.to_owned(), value.to_owned()));
            }
            _ => name.variant.push(part.replace(' ', "")),
        }
    }
    if !segments.suffix.is_empty() {
        name.variant.push("down".to_owned());
    }
    name
}

/// The device name a file name carries: `device_name=NVIDIA_H100_80GB_HBM3` ->
/// `NVIDIA H100 80GB HBM3`.
pub fn device_name_of(file_name: &str) -> Option<String> {
    parse_name(file_name).device_name
}

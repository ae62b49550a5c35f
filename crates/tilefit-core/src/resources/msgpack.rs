//! A small MessagePack decoder for the one place tilefit meets the format: the
//! `NT_AMDGPU_METADATA` note of an AMDGPU code object (LLVM AMDGPUUsage, "Code Object V3 and
//! later Metadata"). Decodes every type the spec defines into [`Value`]; nesting is bounded, and
//! every length is checked against the input.

use super::BinaryError;

/// Deepest nesting accepted (the metadata nests four levels).
const MAX_DEPTH: usize = 32;

/// A decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// nil.
    Nil,
    /// true / false.
    Bool(bool),
    /// Any integer that fits i128 (all of them do).
    Int(i128),
    /// float 32 / 64.
    Float(f64),
    /// A UTF-8 string (invalid bytes replaced).
    Str(String),
    /// bin or ext payload.
    Bytes(Vec<u8>),
    /// array.
    Array(Vec<Value>),
    /// map, in order.
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// The value under a string key of a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// A non-negative integer that fits u64.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }

    /// A string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], BinaryError> {
        let end = self
            .at
            .checked_add(n)
            .ok_or(BinaryError::Truncated("the metadata"))?;
        let bytes = self
            .data
            .get(self.at..end)
            .ok_or(BinaryError::Truncated("the metadata"))?;
        self.at = end;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize) -> Result<u64, BinaryError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn len(&mut self, n: usize) -> Result<usize, BinaryError> {
        usize::try_from(self.uint(n)?).map_err(|_| BinaryError::Truncated("the metadata"))
    }

    fn signed(&mut self, n: usize) -> Result<i128, BinaryError> {
        let raw = self.uint(n)?;
        let bits = n * 8;
        let shift = 64 - bits;
        #[expect(
            clippy::cast_possible_wrap,
            reason = "two's complement reinterpretation"
        )]
        let value = ((raw << shift) as i64) >> shift;
        Ok(i128::from(value))
    }

    fn string(&mut self, n: usize) -> Result<Value, BinaryError> {
        Ok(Value::Str(
            String::from_utf8_lossy(self.take(n)?).into_owned(),
        ))
    }

    fn array(&mut self, n: usize, depth: usize) -> Result<Value, BinaryError> {
        let mut items = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            items.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(items))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value, BinaryError> {
        let mut entries = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let key = self.value(depth + 1)?;
            entries.push((key, self.value(depth + 1)?));
        }
        Ok(Value::Map(entries))
    }

    fn ext(&mut self, n: usize) -> Result<Value, BinaryError> {
        self.take(1)?;
        Ok(Value::Bytes(self.take(n)?.to_vec()))
    }

    fn value(&mut self, depth: usize) -> Result<Value, BinaryError> {
        if depth > MAX_DEPTH {
            return Err(BinaryError::Malformed(
                "metadata nested too deeply".to_owned(),
            ));
        }
        let tag = self.take(1)?[0];
        Ok(match tag {
            0x00..=0x7f => Value::Int(i128::from(tag)),
            0x80..=0x8f => self.map(usize::from(tag & 0x0f), depth)?,
            0x90..=0x9f => self.array(usize::from(tag & 0x0f), depth)?,
            0xa0..=0xbf => self.string(usize::from(tag & 0x1f))?,
            0xc0 => Value::Nil,
            0xc2 => Value::Bool(false),
            0xc3 => Value::Bool(true),
            0xc4 => {
                let n = self.len(1)?;
                Value::Bytes(self.take(n)?.to_vec())
            }
            0xc5 => {
                let n = self.len(2)?;
                Value::Bytes(self.take(n)?.to_vec())
            }
            0xc6 => {
                let n = self.len(4)?;
                Value::Bytes(self.take(n)?.to_vec())
            }
            0xc7 => {
                let n = self.len(1)?;
                self.ext(n)?
            }
            0xc8 => {
                let n = self.len(2)?;
                self.ext(n)?
            }
            0xc9 => {
                let n = self.len(4)?;
                self.ext(n)?
            }
            0xca => Value::Float(f64::from(f32::from_bits(
                u32::try_from(self.uint(4)?).unwrap_or(0),
            ))),
            0xcb => Value::Float(f64::from_bits(self.uint(8)?)),
            0xcc => Value::Int(i128::from(self.uint(1)?)),
            0xcd => Value::Int(i128::from(self.uint(2)?)),
            0xce => Value::Int(i128::from(self.uint(4)?)),
            0xcf => Value::Int(i128::from(self.uint(8)?)),
            0xd0 => Value::Int(self.signed(1)?),
            0xd1 => Value::Int(self.signed(2)?),
            0xd2 => Value::Int(self.signed(4)?),
            0xd3 => Value::Int(self.signed(8)?),
            0xd4 => self.ext(1)?,
            0xd5 => self.ext(2)?,
            0xd6 => self.ext(4)?,
            0xd7 => self.ext(8)?,
            0xd8 => self.ext(16)?,
            0xd9 => {
                let n = self.len(1)?;
                self.string(n)?
            }
            0xda => {
                let n = self.len(2)?;
                self.string(n)?
            }
            0xdb => {
                let n = self.len(4)?;
                self.string(n)?
            }
            0xdc => {
                let n = self.len(2)?;
                self.array(n, depth)?
            }
            0xdd => {
                let n = self.len(4)?;
                self.array(n, depth)?
            }
            0xde => {
                let n = self.len(2)?;
                self.map(n, depth)?
            }
            0xdf => {
                let n = self.len(4)?;
                self.map(n, depth)?
            }
            0xc1 => {
                return Err(BinaryError::Malformed(
                    "metadata uses the never-used MessagePack byte 0xc1".to_owned(),
                ));
            }
            0xe0..=0xff => Value::Int(i128::from(i8::from_le_bytes([tag]))),
        })
    }
}

/// Decode one value from the start of `data`.
pub fn decode(data: &[u8]) -> Result<Value, BinaryError> {
    Reader { data, at: 0 }.value(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_shapes_the_metadata_uses() {
        // {"a": [1, -1, 300, "x"], "b": true}
        let bytes = [
            0x82, 0xa1, b'a', 0x94, 0x01, 0xff, 0xcd, 0x01, 0x2c, 0xa1, b'x', 0xa1, b'b', 0xc3,
        ];
        let value = decode(&bytes).unwrap();
        assert_eq!(
            value.get("a"),
            Some(&Value::Array(vec![
                Value::Int(1),
                Value::Int(-1),
                Value::Int(300),
                Value::Str("x".into())
            ]))
        );
        assert_eq!(value.get("b"), Some(&Value::Bool(true)));
    }

    #[test]
    fn truncated_and_deep_inputs_are_errors() {
        assert!(decode(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(decode(&[0x91; 100]).is_err());
        assert_eq!(decode(&[0xd0, 0x80]).unwrap(), Value::Int(-128));
    }
}

//! Reading pickles of plain data (dicts, lists, tuples, numbers, strings) into
//! [`serde_pickle::Value`], sharing memoized objects as Python does.
//!
//! serde-pickle writes the engine's snapshots, but its reader loses an object that is shared
//! and holds memoized objects itself: the second reference to a frames list whose frame dicts
//! were memoized fails as "recursive". PyTorch's snapshots share exactly that (one frames
//! list per distinct stack, referenced by every block and trace entry that has it), so this
//! reader keeps memoized containers shared until the end and copies them out then. It reads
//! protocols 2 to 5, the opcodes PyTorch's own pickler and Python's `pickle.dump` use for
//! such data; anything else (classes, tensors, protocol 0 text) is refused by name.

use serde_pickle::{HashableValue, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

/// Why bytes are not a pickle this reader can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnpickleError {
    /// The bytes end before the pickle's STOP.
    Truncated,
    /// Anything else, with the byte offset.
    Bad(String),
}

/// A value under construction: containers are shared, so that the memo and every reference
/// see items appended after memoizing.
#[derive(Debug, Clone)]
enum V {
    Plain(Value),
    List(Rc<RefCell<Vec<V>>>),
    Dict(Rc<RefCell<Vec<(V, V)>>>),
    Tuple(Rc<Vec<V>>),
}

/// Deeper nesting than this is taken for a structure that contains itself.
const MAX_DEPTH: usize = 200;

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    stack: Vec<V>,
    marks: Vec<usize>,
    memo: HashMap<u32, V>,
}

/// Reads `bytes` as one pickle.
pub fn unpickle(bytes: &[u8]) -> Result<Value, UnpickleError> {
    let mut r = Reader {
        bytes,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
    };
    let v = r.run()?;
    to_value(&v, 0)
}

fn bad<T>(why: impl Into<String>) -> Result<T, UnpickleError> {
    Err(UnpickleError::Bad(why.into()))
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], UnpickleError> {
        let end = self.pos.checked_add(n).ok_or(UnpickleError::Truncated)?;
        let s = self
            .bytes
            .get(self.pos..end)
            .ok_or(UnpickleError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, UnpickleError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, UnpickleError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn len(&mut self, width: usize) -> Result<usize, UnpickleError> {
        let b = self.take(width)?;
        let mut v = 0u64;
        for (i, &x) in b.iter().enumerate() {
            v |= u64::from(x) << (8 * i);
        }
        usize::try_from(v).or_else(|_| bad("a length beyond memory"))
    }

    fn pop(&mut self) -> Result<V, UnpickleError> {
        match self.stack.pop() {
            Some(v) => Ok(v),
            None => bad(format!("stack underflow at byte {}", self.pos)),
        }
    }

    /// The items since the last MARK.
    fn pop_mark(&mut self) -> Result<Vec<V>, UnpickleError> {
        let Some(m) = self.marks.pop() else {
            return bad(format!("no MARK before byte {}", self.pos));
        };
        if m > self.stack.len() {
            return bad(format!("a MARK beyond the stack at byte {}", self.pos));
        }
        Ok(self.stack.split_off(m))
    }

    fn push(&mut self, v: Value) {
        self.stack.push(V::Plain(v));
    }

    fn string(&mut self, n: usize) -> Result<(), UnpickleError> {
        let s = self.take(n)?.to_vec();
        match String::from_utf8(s) {
            Ok(s) => self.push(Value::String(s)),
            Err(_) => {
                return bad(format!(
                    "a string that is not UTF-8 before byte {}",
                    self.pos
                ));
            }
        }
        Ok(())
    }

    fn long(&mut self, n: usize) -> Result<(), UnpickleError> {
        let b = self.take(n)?;
        if n == 0 {
            self.push(Value::I64(0));
            return Ok(());
        }
        if n > 8 {
            return bad(format!("an integer of {n} bytes, beyond 64 bits"));
        }
        let mut buf = if b[n - 1] & 0x80 != 0 {
            [0xff; 8]
        } else {
            [0; 8]
        };
        buf[..n].copy_from_slice(b);
        self.push(Value::I64(i64::from_le_bytes(buf)));
        Ok(())
    }

    fn memo_put(&mut self, id: u32) -> Result<(), UnpickleError> {
        let top = match self.stack.last() {
            Some(v) => v.clone(),
            None => return bad("memoizing an empty stack"),
        };
        self.memo.insert(id, top);
        Ok(())
    }

    fn memo_get(&mut self, id: u32) -> Result<(), UnpickleError> {
        match self.memo.get(&id) {
            Some(v) => {
                let v = v.clone();
                self.stack.push(v);
                Ok(())
            }
            None => bad(format!("memo {id} read before it was written")),
        }
    }

    fn set_items(&mut self, items: Vec<V>) -> Result<(), UnpickleError> {
        if !items.len().is_multiple_of(2) {
            return bad("a dict update with a key and no value");
        }
        let Some(V::Dict(d)) = self.stack.last() else {
            return bad(format!(
                "SETITEMS on something not a dict at byte {}",
                self.pos
            ));
        };
        let mut d = d.borrow_mut();
        let mut it = items.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            d.push((k, v));
        }
        Ok(())
    }

    fn append(&mut self, items: Vec<V>) -> Result<(), UnpickleError> {
        match self.stack.last() {
            Some(V::List(l)) => {
                l.borrow_mut().extend(items);
                Ok(())
            }
            _ => bad(format!(
                "APPENDS on something not a list at byte {}",
                self.pos
            )),
        }
    }

    fn tuple(&mut self, n: usize) -> Result<(), UnpickleError> {
        if self.stack.len() < n {
            return bad("a tuple of more items than the stack holds");
        }
        let items = self.stack.split_off(self.stack.len() - n);
        self.stack.push(V::Tuple(Rc::new(items)));
        Ok(())
    }

    fn run(&mut self) -> Result<V, UnpickleError> {
        loop {
            let at = self.pos;
            let op = self.u8()?;
            match op {
                0x80 => {
                    let p = self.u8()?;
                    if !(2..=5).contains(&p) {
                        return bad(format!("pickle protocol {p}; only 2 to 5 are read"));
                    }
                }
                0x95 => {
                    self.take(8)?; // FRAME: a length hint
                }
                b'.' => return self.pop(),
                b'(' => self.marks.push(self.stack.len()),
                b'}' => self.stack.push(V::Dict(Default::default())),
                b']' => self.stack.push(V::List(Default::default())),
                b')' => self.stack.push(V::Tuple(Rc::new(Vec::new()))),
                b'd' => {
                    let items = self.pop_mark()?;
                    self.stack.push(V::Dict(Default::default()));
                    self.set_items(items)?;
                }
                b'l' => {
                    let items = self.pop_mark()?;
                    self.stack.push(V::List(Rc::new(RefCell::new(items))));
                }
                b't' => {
                    let items = self.pop_mark()?;
                    self.stack.push(V::Tuple(Rc::new(items)));
                }
                0x85 => self.tuple(1)?,
                0x86 => self.tuple(2)?,
                0x87 => self.tuple(3)?,
                b'a' => {
                    let v = self.pop()?;
                    self.append(vec![v])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    self.append(items)?;
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    self.set_items(vec![k, v])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    self.set_items(items)?;
                }
                b'N' => self.push(Value::None),
                0x88 => self.push(Value::Bool(true)),
                0x89 => self.push(Value::Bool(false)),
                b'J' => {
                    let v = self.u32()? as i32;
                    self.push(Value::I64(v.into()));
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push(Value::I64(v.into()));
                }
                b'M' => {
                    let n = self.len(2)?;
                    self.push(Value::I64(n as i64));
                }
                0x8a => {
                    let n = self.len(1)?;
                    self.long(n)?;
                }
                0x8b => {
                    let n = self.len(4)?;
                    self.long(n)?;
                }
                b'G' => {
                    let b = self.take(8)?;
                    let v = f64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                    self.push(Value::F64(v));
                }
                0x8c => {
                    let n = self.len(1)?;
                    self.string(n)?;
                }
                b'X' => {
                    let n = self.len(4)?;
                    self.string(n)?;
                }
                0x8d => {
                    let n = self.len(8)?;
                    self.string(n)?;
                }
                b'C' | b'B' | 0x8e => {
                    let width = match op {
                        b'C' => 1,
                        b'B' => 4,
                        _ => 8,
                    };
                    let n = self.len(width)?;
                    let b = self.take(n)?.to_vec();
                    self.push(Value::Bytes(b));
                }
                b'q' => {
                    let id = self.u8()?;
                    self.memo_put(id.into())?;
                }
                b'r' => {
                    let id = self.u32()?;
                    self.memo_put(id)?;
                }
                0x94 => {
                    let id = u32::try_from(self.memo.len()).or_else(|_| bad("memo overflow"))?;
                    self.memo_put(id)?;
                }
                b'h' => {
                    let id = self.u8()?;
                    self.memo_get(id.into())?;
                }
                b'j' => {
                    let id = self.u32()?;
                    self.memo_get(id)?;
                }
                other => {
                    let name = if other.is_ascii_graphic() {
                        format!("'{}'", other as char)
                    } else {
                        format!("{other:#04x}")
                    };
                    return bad(format!(
                        "opcode {name} at byte {at} is not one of plain data (a class, a \
                         tensor, or protocol 0/1 text?)"
                    ));
                }
            }
        }
    }
}

fn hashable(v: Value) -> Result<HashableValue, UnpickleError> {
    v.into_hashable()
        .or_else(|e| bad(format!("a dict key that cannot be one: {e}")))
}

/// The finished value, shared containers copied out.
fn to_value(v: &V, depth: usize) -> Result<Value, UnpickleError> {
    if depth > MAX_DEPTH {
        return bad("a structure that contains itself (or nests deeper than 200)");
    }
    Ok(match v {
        V::Plain(p) => p.clone(),
        V::List(l) => Value::List(
            l.borrow()
                .iter()
                .map(|x| to_value(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        V::Tuple(t) => Value::Tuple(
            t.iter()
                .map(|x| to_value(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        V::Dict(d) => {
            let mut out = BTreeMap::new();
            for (k, x) in d.borrow().iter() {
                out.insert(hashable(to_value(k, depth + 1)?)?, to_value(x, depth + 1)?);
            }
            Value::Dict(out)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_list_of_memoized_dicts_reads_twice() {
        // Python: f = [{'a': 1}]; pickle.dumps([f, f], protocol=2)
        let bytes = b"\x80\x02]q\x00(]q\x01}q\x02X\x01\x00\x00\x00aq\x03K\x01sah\x01e.";
        let v = unpickle(bytes).expect("reads");
        let one = Value::List(vec![Value::Dict(BTreeMap::from([(
            HashableValue::String("a".into()),
            Value::I64(1),
        )]))]);
        assert_eq!(v, Value::List(vec![one.clone(), one]));
    }

    #[test]
    fn bad_bytes_are_refused() {
        assert_eq!(unpickle(b"\x80\x02]q\x00("), Err(UnpickleError::Truncated));
        assert!(matches!(unpickle(b"(dp0\n."), Err(UnpickleError::Bad(_))));
        assert!(matches!(
            unpickle(b"\x80\x02c__main__\nX\n."),
            Err(UnpickleError::Bad(_))
        ));
        // A list that contains itself: l = []; l.append(l)
        let looped = b"\x80\x02]q\x00h\x00a.";
        assert!(matches!(unpickle(looped), Err(UnpickleError::Bad(_))));
    }
}

//! Reading pickles of plain data (dicts, lists, tuples, numbers, strings) into [`P`], sharing
//! memoized objects as Python does.
//!
//! serde-pickle writes the engine's snapshots, but its reader loses an object that is shared
//! and holds memoized objects itself: the second reference to a frames list whose frame dicts
//! were memoized fails as "recursive". PyTorch's snapshots share exactly that (one frames
//! list per distinct stack, referenced by every block and trace entry that has it), so this
//! reader keeps memoized objects shared ([`P`] holds them behind `Rc`), and the snapshot's
//! reader (`read`) keeps one list of frames per stack, however many entries share
//! it. A real run's trace has a million entries: copying each shared stack out per entry, as
//! a generic value tree does, costs gigabytes. It reads protocols 2 to 5, the opcodes
//! PyTorch's own pickler and Python's `pickle.dump` use for such data; anything else
//! (classes, tensors, protocol 0 text) is refused by name.

use std::cell::RefCell;
use std::rc::Rc;

/// Why bytes are not a pickle this reader can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnpickleError {
    /// The bytes end before the pickle's STOP.
    Truncated,
    /// Anything else, with the byte offset.
    Bad(String),
}

/// A pickled value. Containers are shared, so that the memo and every reference see items
/// appended after memoizing, and a memoized object read twice is one object (as in Python);
/// a dict keeps its items in the order written (a later duplicate key wins on lookup).
#[derive(Debug, Clone)]
pub enum P {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    /// Bytes: no snapshot field is bytes, so only that they were there is kept.
    Bytes,
    List(Rc<RefCell<Vec<P>>>),
    Dict(Rc<RefCell<Vec<(P, P)>>>),
    Tuple(Rc<[P]>),
}

/// A few words for what a pickle holds instead of what was expected.
pub fn describe(v: &P) -> String {
    match v {
        P::List(l) => format!("a list of {} item(s)", l.borrow().len()),
        P::Tuple(t) => format!("a tuple of {} item(s)", t.len()),
        P::Dict(_) => "a dict".to_string(),
        P::Str(_) | P::Bytes => "a string".to_string(),
        P::None => "None".to_string(),
        P::Int(_) => "an integer".to_string(),
        _ => "a single value".to_string(),
    }
}

/// A dict's items, in the order written.
pub type Items = [(P, P)];

/// The value of `key` in a dict's items: the last one written, as Python keeps the last.
pub fn item<'a>(d: &'a Items, key: &str) -> Option<&'a P> {
    d.iter()
        .rev()
        .find(|(k, _)| matches!(k, P::Str(s) if &**s == key))
        .map(|(_, v)| v)
}

/// Memo ids beyond this are refused rather than allocated for (Python numbers them from 0).
const MAX_MEMO: usize = 1 << 28;
/// How often (in bytes read) the progress callback hears of it.
const PROGRESS_EVERY: usize = 4 << 20;

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    stack: Vec<P>,
    marks: Vec<usize>,
    memo: Vec<Option<P>>,
    progress: &'a mut dyn FnMut(usize),
    next_report: usize,
}

/// Reads `bytes` as one pickle, telling `progress` the bytes read so far now and then. The
/// memo is dropped before returning, so that an object nobody else holds is freed as soon as
/// the caller is done with it.
pub fn unpickle(bytes: &[u8], progress: &mut dyn FnMut(usize)) -> Result<P, UnpickleError> {
    let mut r = Reader {
        bytes,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Vec::new(),
        progress,
        next_report: PROGRESS_EVERY,
    };
    let v = r.run();
    (r.progress)(r.pos);
    v
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

    fn pop(&mut self) -> Result<P, UnpickleError> {
        match self.stack.pop() {
            Some(v) => Ok(v),
            None => bad(format!("stack underflow at byte {}", self.pos)),
        }
    }

    /// The items since the last MARK.
    fn pop_mark(&mut self) -> Result<Vec<P>, UnpickleError> {
        let Some(m) = self.marks.pop() else {
            return bad(format!("no MARK before byte {}", self.pos));
        };
        if m > self.stack.len() {
            return bad(format!("a MARK beyond the stack at byte {}", self.pos));
        }
        Ok(self.stack.split_off(m))
    }

    fn push(&mut self, v: P) {
        self.stack.push(v);
    }

    fn string(&mut self, n: usize) -> Result<(), UnpickleError> {
        let s = self.take(n)?;
        match std::str::from_utf8(s) {
            Ok(s) => {
                let s: Rc<str> = Rc::from(s);
                self.push(P::Str(s));
            }
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
            self.push(P::Int(0));
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
        self.push(P::Int(i64::from_le_bytes(buf)));
        Ok(())
    }

    fn memo_put(&mut self, id: u32) -> Result<(), UnpickleError> {
        let top = match self.stack.last() {
            Some(v) => v.clone(),
            None => return bad("memoizing an empty stack"),
        };
        let id = id as usize;
        if id >= MAX_MEMO {
            return bad(format!("memo id {id} beyond any real pickle's"));
        }
        if id >= self.memo.len() {
            self.memo.resize(id + 1, None);
        }
        self.memo[id] = Some(top);
        Ok(())
    }

    fn memo_get(&mut self, id: u32) -> Result<(), UnpickleError> {
        match self.memo.get(id as usize) {
            Some(Some(v)) => {
                let v = v.clone();
                self.stack.push(v);
                Ok(())
            }
            _ => bad(format!("memo {id} read before it was written")),
        }
    }

    fn set_items(&mut self, items: Vec<P>) -> Result<(), UnpickleError> {
        if !items.len().is_multiple_of(2) {
            return bad("a dict update with a key and no value");
        }
        let Some(P::Dict(d)) = self.stack.last() else {
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

    fn append(&mut self, items: Vec<P>) -> Result<(), UnpickleError> {
        match self.stack.last() {
            Some(P::List(l)) => {
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
        self.stack.push(P::Tuple(items.into()));
        Ok(())
    }

    fn run(&mut self) -> Result<P, UnpickleError> {
        loop {
            let at = self.pos;
            if at >= self.next_report {
                (self.progress)(at);
                self.next_report = at + PROGRESS_EVERY;
            }
            let op = self.u8()?;
            if op == b'.' {
                return self.pop();
            }
            if !(self.framing(op)? || self.container(op)? || self.value(op)? || self.memo(op)?) {
                let name = if op.is_ascii_graphic() {
                    format!("'{}'", op as char)
                } else {
                    format!("{op:#04x}")
                };
                return bad(format!(
                    "opcode {name} at byte {at} is not one of plain data (a class, a \
                     tensor, or protocol 0/1 text?)"
                ));
            }
        }
    }

    /// PROTO, FRAME and MARK; false for any other opcode.
    fn framing(&mut self, op: u8) -> Result<bool, UnpickleError> {
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
            b'(' => self.marks.push(self.stack.len()),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The opcodes that make or fill dicts, lists and tuples; false for any other.
    fn container(&mut self, op: u8) -> Result<bool, UnpickleError> {
        match op {
            b'}' => self.stack.push(P::Dict(Default::default())),
            b']' => self.stack.push(P::List(Default::default())),
            b')' => self.stack.push(P::Tuple(Rc::new([]))),
            b'd' => {
                let items = self.pop_mark()?;
                self.stack.push(P::Dict(Default::default()));
                self.set_items(items)?;
            }
            b'l' => {
                let items = self.pop_mark()?;
                self.stack.push(P::List(Rc::new(RefCell::new(items))));
            }
            b't' => {
                let items = self.pop_mark()?;
                self.stack.push(P::Tuple(items.into()));
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
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The opcodes of None, booleans, numbers, strings and bytes; false for any other.
    fn value(&mut self, op: u8) -> Result<bool, UnpickleError> {
        match op {
            b'N' => self.push(P::None),
            0x88 => self.push(P::Bool(true)),
            0x89 => self.push(P::Bool(false)),
            b'J' => {
                let v = self.u32()? as i32;
                self.push(P::Int(v.into()));
            }
            b'K' => {
                let v = self.u8()?;
                self.push(P::Int(v.into()));
            }
            b'M' => {
                let n = self.len(2)?;
                self.push(P::Int(n as i64));
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
                self.push(P::Float(v));
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
                self.take(n)?;
                self.push(P::Bytes);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The memo's opcodes; false for any other.
    fn memo(&mut self, op: u8) -> Result<bool, UnpickleError> {
        match op {
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
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<P, UnpickleError> {
        unpickle(bytes, &mut |_| {})
    }

    #[test]
    fn a_shared_list_of_memoized_dicts_reads_twice_as_one_object() {
        // Python: f = [{'a': 1}]; pickle.dumps([f, f], protocol=2)
        let bytes = b"\x80\x02]q\x00(]q\x01}q\x02X\x01\x00\x00\x00aq\x03K\x01sah\x01e.";
        let P::List(outer) = read(bytes).expect("reads") else {
            panic!("a list")
        };
        let outer = outer.borrow();
        let (P::List(a), P::List(b)) = (&outer[0], &outer[1]) else {
            panic!("two lists")
        };
        assert!(Rc::ptr_eq(a, b), "the shared list is one object");
        let a = a.borrow();
        let P::Dict(d) = &a[0] else { panic!("a dict") };
        let d = d.borrow();
        assert!(matches!((&d[0].0, &d[0].1), (P::Str(k), P::Int(1)) if &**k == "a"));
    }

    #[test]
    fn bad_bytes_are_refused() {
        assert!(matches!(
            read(b"\x80\x02]q\x00("),
            Err(UnpickleError::Truncated)
        ));
        assert!(matches!(read(b"(dp0\n."), Err(UnpickleError::Bad(_))));
        assert!(matches!(
            read(b"\x80\x02c__main__\nX\n."),
            Err(UnpickleError::Bad(_))
        ));
        assert!(matches!(
            read(b"\x80\x02h\x05."),
            Err(UnpickleError::Bad(_))
        ));
    }
}

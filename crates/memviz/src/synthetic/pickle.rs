//! A streaming writer of the pickle opcodes Python's own `pickle.dump` (protocol 4) uses for
//! a snapshot: every dict and list memoized, every string memoized once and fetched again by
//! memo id. That sharing is what keeps PyTorch's files small (a trace entry's keys, action
//! and frames list are two-byte fetches), and it is what a reader must follow, so the
//! benchmark's file has it too. serde-pickle writes no memo, so it cannot make such a file.

use std::collections::HashMap;
use std::io::{self, Write};

/// Opcodes (pickletools' names).
const PROTO: u8 = 0x80;
const STOP: u8 = b'.';
const MARK: u8 = b'(';
const EMPTY_DICT: u8 = b'}';
const EMPTY_LIST: u8 = b']';
const SETITEMS: u8 = b'u';
const APPENDS: u8 = b'e';
const MEMOIZE: u8 = 0x94;
const BINGET: u8 = b'h';
const LONG_BINGET: u8 = b'j';
const SHORT_BINUNICODE: u8 = 0x8c;
const BININT1: u8 = b'K';
const BININT: u8 = b'J';
const LONG1: u8 = 0x8a;
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;

/// Python batches APPENDS and SETITEMS in groups of this many.
pub const BATCH: usize = 1000;

/// Writes opcodes to `out`, keeping Python's memo numbering.
#[derive(Debug)]
pub struct Pickler<W: Write> {
    out: W,
    memo: u32,
    strings: HashMap<String, u32>,
}

impl<W: Write> Pickler<W> {
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(&[PROTO, 4])?;
        Ok(Pickler {
            out,
            memo: 0,
            strings: HashMap::new(),
        })
    }

    /// Memoizes the object on top of the stack; its memo id.
    pub fn memoize(&mut self) -> io::Result<u32> {
        self.out.write_all(&[MEMOIZE])?;
        self.memo += 1;
        Ok(self.memo - 1)
    }

    /// Pushes memoized object `id` again.
    pub fn get(&mut self, id: u32) -> io::Result<()> {
        match u8::try_from(id) {
            Ok(small) => self.out.write_all(&[BINGET, small]),
            Err(_) => {
                self.out.write_all(&[LONG_BINGET])?;
                self.out.write_all(&id.to_le_bytes())
            }
        }
    }

    pub fn op(&mut self, op: u8) -> io::Result<()> {
        self.out.write_all(&[op])
    }

    pub fn mark(&mut self) -> io::Result<()> {
        self.op(MARK)
    }

    /// An empty dict, memoized: items follow between [`Self::mark`] and [`Self::setitems`].
    pub fn dict(&mut self) -> io::Result<u32> {
        self.op(EMPTY_DICT)?;
        self.memoize()
    }

    /// An empty list, memoized: items follow between [`Self::mark`] and [`Self::appends`].
    pub fn list(&mut self) -> io::Result<u32> {
        self.op(EMPTY_LIST)?;
        self.memoize()
    }

    pub fn setitems(&mut self) -> io::Result<()> {
        self.op(SETITEMS)
    }

    pub fn appends(&mut self) -> io::Result<()> {
        self.op(APPENDS)
    }

    /// A string (under 256 bytes), written once and fetched from the memo after that.
    pub fn str(&mut self, s: &str) -> io::Result<()> {
        if let Some(&id) = self.strings.get(s) {
            return self.get(id);
        }
        let len = u8::try_from(s.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a string over 255 bytes"))?;
        self.out.write_all(&[SHORT_BINUNICODE, len])?;
        self.out.write_all(s.as_bytes())?;
        let id = self.memoize()?;
        self.strings.insert(s.to_string(), id);
        Ok(())
    }

    /// An integer in the shortest of Python's encodings.
    pub fn int(&mut self, v: i64) -> io::Result<()> {
        if (0..256).contains(&v) {
            return self.out.write_all(&[BININT1, v as u8]);
        }
        if let Ok(small) = i32::try_from(v) {
            self.out.write_all(&[BININT])?;
            return self.out.write_all(&small.to_le_bytes());
        }
        // LONG1: the fewest little-endian two's-complement bytes that keep the sign.
        let bytes = v.to_le_bytes();
        let mut n = 8;
        while n > 1 {
            let top = bytes[n - 1];
            let next_sign = bytes[n - 2] & 0x80;
            if (top == 0 && next_sign == 0) || (top == 0xff && next_sign != 0) {
                n -= 1;
            } else {
                break;
            }
        }
        self.out.write_all(&[LONG1, n as u8])?;
        self.out.write_all(&bytes[..n])
    }

    pub fn bool(&mut self, v: bool) -> io::Result<()> {
        self.op(if v { NEWTRUE } else { NEWFALSE })
    }

    /// Ends the pickle and hands back the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.op(STOP)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

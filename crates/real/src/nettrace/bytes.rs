//! Bounds-checked little-endian decoding over a byte slice. Every read
//! returns `None` past the end instead of panicking; callers turn that into
//! an error carrying the position.

/// A cursor over a slice.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bytes<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Bytes { buf, pos: 0 }
    }

    pub(crate) fn at(buf: &'a [u8], pos: usize) -> Self {
        Bytes { buf, pos }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Moves to `pos` (clamped to the end).
    pub(crate) fn set_pos(&mut self, pos: usize) {
        self.pos = pos.min(self.buf.len());
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    pub(crate) fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Some(a)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    pub(crate) fn i16(&mut self) -> Option<i16> {
        self.array().map(i16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    pub(crate) fn i32(&mut self) -> Option<i32> {
        self.array().map(i32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    pub(crate) fn i64(&mut self) -> Option<i64> {
        self.array().map(i64::from_le_bytes)
    }

    pub(crate) fn f64(&mut self) -> Option<f64> {
        self.array().map(f64::from_le_bytes)
    }

    /// A pointer-sized unsigned value (4 or 8 bytes).
    pub(crate) fn pointer(&mut self, size: u32) -> Option<u64> {
        if size == 4 {
            self.u32().map(u64::from)
        } else {
            self.u64()
        }
    }

    /// LEB128-style unsigned integer (7 bits a byte, high bit = more), at
    /// most 10 bytes; `None` if it runs past the end or does not fit 64 bits.
    pub(crate) fn varu64(&mut self) -> Option<u64> {
        let mut value: u64 = 0;
        for i in 0..10u32 {
            let b = self.u8()?;
            let bits = u64::from(b & 0x7f);
            if i == 9 && bits > 1 {
                return None;
            }
            value |= bits << (7 * i);
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// A varuint that must fit 32 bits.
    pub(crate) fn varu32(&mut self) -> Option<u32> {
        u32::try_from(self.varu64()?).ok()
    }

    /// A NUL-terminated UTF-16LE string of at most `max_units` code units
    /// (the terminator not counted); `None` if unterminated or too long.
    pub(crate) fn utf16z(&mut self, max_units: usize) -> Option<String> {
        let mut units = Vec::new();
        loop {
            let u = self.u16()?;
            if u == 0 {
                return Some(String::from_utf16_lossy(&units));
            }
            if units.len() >= max_units {
                return None;
            }
            units.push(u);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let mut b = Bytes::new(&[0x00, 0x7f, 0x80, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(b.varu64(), Some(0));
        assert_eq!(b.varu64(), Some(127));
        assert_eq!(b.varu64(), Some(128));
        assert_eq!(b.varu32(), Some(u32::MAX));
        assert_eq!(b.varu64(), None);
        // 64-bit max is 10 bytes; an 11th continuation or a high 10th byte fails.
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Bytes::new(&max).varu64(), Some(u64::MAX));
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert_eq!(Bytes::new(&over).varu64(), None);
        let long = [0x80; 11];
        assert_eq!(Bytes::new(&long).varu64(), None);
        // Over 32 bits.
        assert_eq!(Bytes::new(&[0x80, 0x80, 0x80, 0x80, 0x10]).varu32(), None);
    }

    #[test]
    fn reads_stop_at_the_end() {
        let mut b = Bytes::new(&[1, 2, 3]);
        assert_eq!(b.u32(), None);
        assert_eq!(b.u16(), Some(0x0201));
        assert_eq!(b.take(2), None);
        assert_eq!(b.u8(), Some(3));
        assert_eq!(b.u8(), None);
        assert_eq!(b.take(usize::MAX), None);
        let mut s = Bytes::new(&[b'a', 0, 0, 0]);
        assert_eq!(s.utf16z(10).as_deref(), Some("a"));
        assert_eq!(Bytes::new(&[b'a', 0, b'b', 0]).utf16z(10), None);
        assert_eq!(Bytes::new(&[b'a', 0, b'b', 0, 0, 0]).utf16z(1), None);
    }
}

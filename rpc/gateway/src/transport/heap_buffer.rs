//! A growable byte buffer on the C heap, for compressed answers: mimalloc backs its arenas with
//! 2 MiB huge pages, so a buffer in a size class a thread had not used kept a fresh huge page
//! resident; glibc serves it from 4 KiB pages and gives large ones back when freed.

use std::{io, mem::MaybeUninit, ptr::NonNull};

/// Bytes in one `malloc`ed block, freed on drop.
pub struct HeapBuffer {
    start: NonNull<u8>,
    len: usize,
    capacity: usize,
}

// SAFETY: the buffer owns its block alone; glibc's free may run on any thread.
unsafe impl Send for HeapBuffer {}
// SAFETY: shared references only read.
unsafe impl Sync for HeapBuffer {}

impl HeapBuffer {
    pub fn with_capacity(capacity: usize) -> io::Result<Self> {
        let mut buffer = Self {
            start: NonNull::dangling(),
            len: 0,
            capacity: 0,
        };
        buffer.reserve(capacity)?;
        Ok(buffer)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Makes room for at least `additional` more bytes (doubling, as `Vec` does).
    pub fn reserve(&mut self, additional: usize) -> io::Result<()> {
        let needed = self
            .len
            .checked_add(additional)
            .ok_or_else(|| io::Error::other("buffer size overflow"))?;
        if needed <= self.capacity {
            return Ok(());
        }
        let capacity = needed.max(self.capacity.saturating_mul(2));
        let old = if self.capacity == 0 {
            std::ptr::null_mut()
        } else {
            self.start.as_ptr().cast()
        };
        // SAFETY: `old` is null or this buffer's own block; realloc keeps its first `len` bytes.
        let grown = unsafe { libc::realloc(old, capacity) };
        self.start = NonNull::new(grown.cast())
            .ok_or_else(|| io::Error::other(format!("out of memory for {capacity} bytes")))?;
        self.capacity = capacity;
        Ok(())
    }

    pub fn extend_from_slice(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.reserve(bytes.len())?;
        // SAFETY: `reserve` made room for `bytes` after the first `len` bytes; the block is
        // this buffer's own, so the two do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.start.as_ptr().add(self.len),
                bytes.len(),
            );
        }
        self.len += bytes.len();
        Ok(())
    }

    /// The room after the bytes written so far.
    pub fn spare(&mut self) -> &mut [MaybeUninit<u8>] {
        // SAFETY: the block holds `capacity` bytes, of which the first `len` are written.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.start.as_ptr().add(self.len).cast(),
                self.capacity - self.len,
            )
        }
    }

    /// Counts `written` more bytes as written.
    ///
    /// # Safety
    /// The first `written` bytes of [`Self::spare`] must have been written.
    pub unsafe fn advance(&mut self, written: usize) {
        debug_assert!(written <= self.capacity - self.len);
        self.len += written;
    }
}

impl std::ops::Deref for HeapBuffer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the first `len` bytes of the block are written (a dangling start only with
        // `len` 0, which a slice allows).
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for HeapBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.start.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for HeapBuffer {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Drop for HeapBuffer {
    fn drop(&mut self) {
        if self.capacity > 0 {
            // SAFETY: the block came from realloc and is freed once, here.
            unsafe { libc::free(self.start.as_ptr().cast()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_grows_keeping_what_was_written() {
        let mut buffer = HeapBuffer::with_capacity(0).unwrap();
        assert_eq!(&buffer[..], b"");
        let mut expected = Vec::new();
        for i in 0..2_000u32 {
            let piece = i.to_be_bytes();
            buffer.extend_from_slice(&piece).unwrap();
            expected.extend_from_slice(&piece);
        }
        assert_eq!(&buffer[..], &expected[..]);
        assert!(buffer.capacity() >= buffer.len());
        buffer.clear();
        assert_eq!(buffer.len(), 0);
        buffer.extend_from_slice(b"again").unwrap();
        assert_eq!(&buffer[..], b"again");
    }

    #[test]
    fn spare_room_counts_once_advanced() {
        let mut buffer = HeapBuffer::with_capacity(8).unwrap();
        buffer.extend_from_slice(b"ab").unwrap();
        let spare = buffer.spare();
        assert_eq!(spare.len(), 6);
        spare[0].write(b'c');
        spare[1].write(b'd');
        // SAFETY: two bytes were written just above.
        unsafe { buffer.advance(2) };
        buffer[0] = b'A';
        assert_eq!(&buffer[..], b"Abcd");
    }

    #[test]
    fn an_impossible_size_is_an_error() {
        let mut buffer = HeapBuffer::with_capacity(1).unwrap();
        buffer.extend_from_slice(b"x").unwrap();
        assert!(buffer.reserve(usize::MAX).is_err());
        assert!(HeapBuffer::with_capacity(usize::MAX / 2).is_err());
    }
}

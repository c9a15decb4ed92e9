//! gzip (RFC 1952) through zlib-rs (zlib-ng's deflate in Rust, behind zlib's C interface),
//! with the compressor's memory from the C heap.
//!
//! Why not flate2: every flate2 backend allocates its compressor through Rust's global
//! allocator, mimalloc, which backs its arenas with 2 MiB huge pages. A compressor's few 64 KiB
//! buffers fall in size classes the answers themselves do not use, so the first compressed
//! answer on a thread brought in a fresh huge page per class, and they stayed resident. glibc
//! serves these buffers from 4 KiB pages and gives them back when the compressor is dropped.
//! zlib's interface takes the allocator as two functions, so the choice is made here, not by
//! which features of a shared crate happen to be on.

use crate::transport::heap_buffer::HeapBuffer;
use libz_rs_sys as z;
use std::{ffi::c_int, io, ptr};

/// Level 2, zlib-ng's "fast": an answer is compressed while the client waits for it. Level 1
/// ("quick") is faster still but compresses answers about half as well.
const LEVEL: c_int = 2;
/// 15: a 32 KiB window; +16: a gzip header and trailer instead of zlib's.
const WINDOW_BITS: c_int = 15 + 16;
/// zlib's default: 128 KiB of hash tables beside the window.
const MEM_LEVEL: c_int = 8;
/// How much output room a step adds when it runs out.
const OUT_STEP: usize = 16 << 10;

/// One gzip stream being written.
pub struct GzipEncoder {
    // Boxed: zlib keeps a pointer back to the stream and refuses one that moved.
    stream: Box<z::z_stream>,
}

// SAFETY: between calls the stream points only at its own state, which zlib allocated on the
// C heap (any thread may use or free it); `deflate` clears the input and output pointers after
// each call. Not Sync: zlib's calls mutate the state.
unsafe impl Send for GzipEncoder {}

#[cfg(test)]
thread_local! {
    /// The C heap blocks this thread's compressors hold.
    static LIVE_BLOCKS: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

unsafe extern "C" fn c_alloc(_opaque: z::voidpf, items: z::uInt, size: z::uInt) -> z::voidpf {
    #[cfg(test)]
    LIVE_BLOCKS.set(LIVE_BLOCKS.get() + 1);
    match (items as usize).checked_mul(size as usize) {
        // SAFETY: malloc of any size is sound; zlib checks the result for null.
        Some(bytes) => unsafe { libc::malloc(bytes) },
        None => ptr::null_mut(),
    }
}

unsafe extern "C" fn c_free(_opaque: z::voidpf, address: z::voidpf) {
    #[cfg(test)]
    LIVE_BLOCKS.set(LIVE_BLOCKS.get() - 1);
    // SAFETY: zlib frees only what `c_alloc` gave it.
    unsafe { libc::free(address) }
}

impl GzipEncoder {
    pub fn new() -> io::Result<Self> {
        let mut stream = Box::new(z::z_stream {
            zalloc: Some(c_alloc),
            zfree: Some(c_free),
            ..z::z_stream::default()
        });
        let size = c_int::try_from(size_of::<z::z_stream>()).map_err(io::Error::other)?;
        // SAFETY: `stream` is initialised as zlib requires (its allocator set, no state yet),
        // and the version and size are those of the library linked in.
        let rc = unsafe {
            z::deflateInit2_(
                &mut *stream,
                LEVEL,
                z::Z_DEFLATED,
                WINDOW_BITS,
                MEM_LEVEL,
                z::Z_DEFAULT_STRATEGY,
                z::zlibVersion(),
                size,
            )
        };
        if rc != z::Z_OK {
            return Err(zlib_error("deflateInit2", rc));
        }
        Ok(Self { stream })
    }

    /// Compresses `input`, appending to `out` what zlib emits now (it may keep some back).
    pub fn write(&mut self, input: &[u8], out: &mut HeapBuffer) -> io::Result<()> {
        for piece in input.chunks(u32::MAX as usize) {
            self.deflate(piece, out, z::Z_NO_FLUSH)?;
        }
        Ok(())
    }

    /// Ends the stream, appending the rest of the compressed bytes and the gzip trailer.
    pub fn finish(mut self, out: &mut HeapBuffer) -> io::Result<()> {
        self.deflate(&[], out, z::Z_FINISH)
    }

    fn deflate(&mut self, input: &[u8], out: &mut HeapBuffer, flush: c_int) -> io::Result<()> {
        let stream = &mut *self.stream;
        // zlib only reads through next_in.
        stream.next_in = input.as_ptr().cast_mut();
        stream.avail_in = z::uInt::try_from(input.len()).map_err(io::Error::other)?;
        loop {
            if out.capacity() == out.len() {
                out.reserve(OUT_STEP)?;
            }
            let spare = out.spare();
            let room = spare.len().min(u32::MAX as usize);
            stream.next_out = spare.as_mut_ptr().cast();
            stream.avail_out = room as z::uInt;
            // SAFETY: next_in/avail_in name `input` and next_out/avail_out the spare room of
            // `out`, both alive for the call.
            let rc = unsafe { z::deflate(stream, flush) };
            let written = room - stream.avail_out as usize;
            // SAFETY: zlib wrote the first `written` bytes of the spare room.
            unsafe { out.advance(written) };
            match rc {
                z::Z_STREAM_END => break,
                // The room is full: there is more to come.
                z::Z_OK | z::Z_BUF_ERROR if stream.avail_out == 0 => {}
                // Room left over: zlib took all the input and has nothing more to give now.
                z::Z_OK | z::Z_BUF_ERROR if flush != z::Z_FINISH => break,
                z::Z_OK => {}
                rc => return Err(zlib_error("deflate", rc)),
            }
        }
        stream.next_in = ptr::null_mut();
        stream.next_out = ptr::null_mut();
        Ok(())
    }
}

impl Drop for GzipEncoder {
    fn drop(&mut self) {
        // SAFETY: the stream was initialised by deflateInit2 and is ended once, here.
        unsafe { z::deflateEnd(&mut *self.stream) };
    }
}

fn zlib_error(call: &str, rc: c_int) -> io::Error {
    io::Error::other(format!("zlib's {call} failed with code {rc}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn pieces_of_any_size_make_one_stream_that_decodes_to_the_input() {
        let body: Vec<u8> = (0..300_000u32)
            .flat_map(|i| {
                format!("{{\"n\":\"{:#x}\"}},", i.wrapping_mul(2_654_435_761)).into_bytes()
            })
            .collect();
        for piece in [1, 1000, 64 << 10, body.len()] {
            let mut encoder = GzipEncoder::new().unwrap();
            let mut out = HeapBuffer::with_capacity(0).unwrap();
            for input in body.chunks(piece) {
                encoder.write(input, &mut out).unwrap();
            }
            encoder.finish(&mut out).unwrap();
            assert_eq!(gunzip(&out), body, "pieces of {piece}");
            assert!(out.len() * 3 < body.len());
        }
    }

    #[test]
    fn the_compressors_memory_is_on_the_c_heap_and_given_back() {
        let before = LIVE_BLOCKS.get();
        let mut encoder = GzipEncoder::new().unwrap();
        let mut out = HeapBuffer::with_capacity(0).unwrap();
        encoder.write(&[b'x'; 100_000], &mut out).unwrap();
        assert!(
            LIVE_BLOCKS.get() > before,
            "the state is allocated by c_alloc"
        );
        encoder.finish(&mut out).unwrap();
        assert_eq!(LIVE_BLOCKS.get(), before);
        drop(GzipEncoder::new().unwrap());
        assert_eq!(LIVE_BLOCKS.get(), before);
    }

    #[test]
    fn an_empty_input_is_a_valid_empty_stream() {
        let mut out = HeapBuffer::with_capacity(0).unwrap();
        GzipEncoder::new().unwrap().finish(&mut out).unwrap();
        assert_eq!(gunzip(&out), b"");
    }
}

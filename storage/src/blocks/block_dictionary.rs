//! zstd dictionaries trained on a datadir's own block data, and the per-handle cache of their
//! digested forms.
//!
//! A dictionary is stored once per table in `Meta` (see block_codec.rs for when it is trained
//! and which values use it) and never changed or deleted: a value compressed with it names it
//! by the dictionary id in its zstd frame header, and the id is the dictionary's own (zstd
//! derives it from the dictionary's content). So a digested dictionary cached by id stays right
//! in every process and across unwinds, and a write transaction that trained one and then
//! aborted leaves only an unused cache entry behind.

use crate::{Error, Result};
use std::{
    collections::HashMap,
    sync::{Arc, PoisonError, RwLock},
};
use zstd::{
    dict::{DecoderDictionary, EncoderDictionary},
    zstd_safe::{CCtx, DCtx},
};

/// A trained dictionary, digested for compressing (at its table's level) and decompressing.
pub struct Dictionary {
    id: u32,
    encoder: EncoderDictionary<'static>,
    decoder: DecoderDictionary<'static>,
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dictionary")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Dictionary {
    /// Digests `bytes` (a zstd dictionary, as `zstd::dict::from_samples` makes) for `level`.
    pub fn new(bytes: &[u8], level: i32) -> Result<Self> {
        let id = dictionary_id(bytes)?;
        let corrupt = |e: std::io::Error| Error::Corrupt(format!("zstd dictionary {id}: {e}"));
        Ok(Self {
            id,
            encoder: EncoderDictionary::try_copy(bytes, level).map_err(corrupt)?,
            decoder: DecoderDictionary::try_copy(bytes).map_err(corrupt)?,
        })
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    /// `raw` as one zstd frame that names this dictionary.
    pub fn compress(&self, raw: &[u8]) -> std::result::Result<Vec<u8>, String> {
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(raw.len()));
        let cdict = self.encoder.as_cdict();
        CONTEXTS
            .with_borrow_mut(|(cctx, _)| {
                let cctx = cctx.get_or_insert_with(CCtx::create);
                cctx.compress_using_cdict(&mut out, raw, cdict)
            })
            .map_err(|code| {
                format!(
                    "zstd with dictionary {}: {}",
                    self.id,
                    zstd::zstd_safe::get_error_name(code)
                )
            })?;
        Ok(out)
    }

    /// Decompresses a frame of `compress` into `out`; returns the bytes written.
    pub fn decompress_into(&self, frame: &[u8], out: &mut [u8]) -> Result<usize> {
        let ddict = self.decoder.as_ddict();
        CONTEXTS
            .with_borrow_mut(|(_, dctx)| {
                let dctx = dctx.get_or_insert_with(DCtx::create);
                dctx.decompress_using_ddict(out, frame, ddict)
            })
            .map_err(|code| {
                Error::Corrupt(format!(
                    "zstd value (dictionary {}): {}",
                    self.id,
                    zstd::zstd_safe::get_error_name(code)
                ))
            })
    }
}

thread_local! {
    /// Each thread's compression and decompression context, made on first use and reused: a
    /// fresh context allocates and faults in its working memory (about 1 MiB to compress at
    /// level 3) for every value.
    static CONTEXTS: std::cell::RefCell<(Option<CCtx<'static>>, Option<DCtx<'static>>)> =
        const { std::cell::RefCell::new((None, None)) };
}

/// The id a zstd dictionary carries in its header (0 or no header: not a trained dictionary).
pub fn dictionary_id(bytes: &[u8]) -> Result<u32> {
    zstd::zstd_safe::get_dict_id_from_dict(bytes)
        .map(u32::from)
        .ok_or_else(|| {
            Error::Corrupt(format!(
                "a zstd dictionary of {} bytes without a dictionary id",
                bytes.len()
            ))
        })
}

/// The dictionary id in a zstd frame's header (`None`: the frame names none).
pub fn frame_dictionary_id(frame: &[u8]) -> Option<u32> {
    zstd::zstd_safe::get_dict_id_from_frame(frame).map(u32::from)
}

/// Digested dictionaries by id, shared by a database handle's transactions. A dictionary is
/// digested for the level of the one table whose `Meta` entry holds it.
#[derive(Default)]
pub(crate) struct Dictionaries(RwLock<HashMap<u32, Arc<Dictionary>>>);

impl Dictionaries {
    pub(crate) fn get(&self, id: u32) -> Option<Arc<Dictionary>> {
        let map = self.0.read().unwrap_or_else(PoisonError::into_inner);
        map.get(&id).cloned()
    }

    /// The cached dictionary with `bytes`' id, digesting `bytes` when there is none.
    pub(crate) fn get_or_digest(&self, bytes: &[u8], level: i32) -> Result<Arc<Dictionary>> {
        if let Some(found) = self.get(dictionary_id(bytes)?) {
            return Ok(found);
        }
        let digested = Arc::new(Dictionary::new(bytes, level)?);
        let mut map = self.0.write().unwrap_or_else(PoisonError::into_inner);
        Ok(map.entry(digested.id).or_insert(digested).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Receipts-like samples: shared structure, varying numbers.
    fn samples(count: u32) -> Vec<Vec<u8>> {
        (0..count)
            .map(|i| {
                let mut v = Vec::new();
                for j in 0..40u32 {
                    v.extend_from_slice(b"\x01\x00\x00\x00transfer(address,uint256)");
                    v.extend_from_slice(&[0u8; 12]);
                    v.extend_from_slice(&(i.wrapping_mul(2_654_435_761) ^ j).to_be_bytes());
                    v.extend_from_slice(&(j * 7919 + i).to_le_bytes());
                }
                v
            })
            .collect()
    }

    #[test]
    fn a_frame_names_its_dictionary_and_round_trips_through_the_cache() {
        let samples = samples(400);
        let bytes = zstd::dict::from_samples(&samples, 8 << 10).unwrap();
        let cache = Dictionaries::default();
        let dict = cache.get_or_digest(&bytes, 3).unwrap();
        assert_eq!(dict.id(), dictionary_id(&bytes).unwrap());
        assert!(Arc::ptr_eq(&dict, &cache.get_or_digest(&bytes, 3).unwrap()));
        let raw = &samples[7];
        let frame = dict.compress(raw).unwrap();
        assert!(
            frame.len() * 3 < raw.len(),
            "{} of {}",
            frame.len(),
            raw.len()
        );
        assert_eq!(frame_dictionary_id(&frame), Some(dict.id()));
        let mut out = vec![0u8; raw.len()];
        assert_eq!(dict.decompress_into(&frame, &mut out).unwrap(), raw.len());
        assert_eq!(&out, raw);
        // Without the dictionary, or with another one, the frame does not decode.
        assert!(zstd::bulk::decompress(&frame, raw.len()).is_err());
        assert!(dictionary_id(b"not a dictionary").is_err());
    }
}

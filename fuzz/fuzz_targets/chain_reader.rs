//! A file of RLP blocks: the streaming reader, then each block decoded as ingest decodes it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use quarry_ingest::reader::BlockReader;

fuzz_target!(|data: &[u8]| {
    let stream = Box::new(std::io::Cursor::new(data.to_vec()));
    for raw in BlockReader::from_reader("fuzz".into(), stream) {
        match raw {
            Ok(raw) => {
                let _ = quarry_ingest::decode_raw_block(raw);
            }
            Err(e) => {
                let _ = e.to_string();
                break;
            }
        }
    }
});

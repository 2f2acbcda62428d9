//! How a JSON record sits in a table: as its JSON text, or LZ4-compressed
//! against a fixed dictionary of typical records when that is smaller.
//!
//! A stored value that starts with a JSON byte (`{`, `[`, `"`, ...) is the
//! record's JSON as it is: every value written before schema 2, and small
//! records now. JSON never starts with a byte below 0x09 (tab), so those
//! are the codec's tags. A value that starts with [`LZ4_DICT_V1`] is followed by the
//! JSON's length (u32, little endian) and an LZ4 block compressed with
//! `assets/store/lz4-dict-v1.jsonl` as its dictionary. Records share most
//! of their text (keys, kinds, provenance, ids' prefixes), so the
//! dictionary gives LZ4 something to match from the first byte: a failed
//! turn's events shrink about 3.6x and other records about 2.5x, where LZ4
//! alone manages 1.5x. The dictionary is 12 KiB because LZ4 keeps 4,096
//! hash slots and hashes the whole dictionary before each record: 38 KiB
//! cost ~12 µs a record for a 3% better ratio, 12 KiB ~3-4 µs.
//!
//! The dictionary is frozen: changing a byte would make every record
//! compressed against it undecodable. A better dictionary gets a new tag.

use std::borrow::Cow;

/// The tag of a value compressed against dictionary v1.
pub(crate) const LZ4_DICT_V1: u8 = 0x01;

static DICT_V1: &[u8] = include_bytes!("../../assets/store/lz4-dict-v1.jsonl");

/// Records shorter than this are kept as JSON: LZ4's gain on them does not
/// pay for the five bytes of header.
const MIN_PACK: usize = 96;

/// The largest record the codec compresses, and so the largest length a
/// compressed value may claim: a corrupt length cannot make a reader
/// allocate more than this.
const MAX_PACKED: usize = 64 * 1024 * 1024;

const HEADER: usize = 5;

/// The bytes to store for a record's JSON.
pub(crate) fn pack(json: Vec<u8>) -> Vec<u8> {
    if json.len() < MIN_PACK || json.len() > MAX_PACKED {
        return json;
    }
    let mut out = vec![0u8; HEADER + lz4_flex::block::get_maximum_output_size(json.len())];
    out[0] = LZ4_DICT_V1;
    out[1..HEADER].copy_from_slice(&(json.len() as u32).to_le_bytes());
    match lz4_flex::block::compress_into_with_dict(&json, &mut out[HEADER..], DICT_V1) {
        Ok(n) if HEADER + n < json.len() => {
            out.truncate(HEADER + n);
            out
        }
        _ => json,
    }
}

/// A record's JSON from its stored bytes.
pub(crate) fn unpack(stored: &[u8]) -> Result<Cow<'_, [u8]>, String> {
    match stored.first() {
        Some(&LZ4_DICT_V1) => {
            let len: [u8; 4] = stored
                .get(1..HEADER)
                .and_then(|b| b.try_into().ok())
                .ok_or("a compressed value is cut short before its length")?;
            let len = u32::from_le_bytes(len) as usize;
            if len > MAX_PACKED {
                return Err(format!(
                    "a compressed value claims {len} bytes, more than the {MAX_PACKED} the store compresses"
                ));
            }
            let mut json = vec![0u8; len];
            let n = lz4_flex::block::decompress_into_with_dict(&stored[HEADER..], &mut json, DICT_V1)
                .map_err(|e| format!("a compressed value does not decompress: {e}"))?;
            if n != len {
                return Err(format!(
                    "a compressed value decompressed to {n} bytes, not the {len} it claims"
                ));
            }
            Ok(Cow::Owned(json))
        }
        Some(&tag) if tag < 0x09 => Err(format!(
            "a value has encoding tag {tag:#04x}, which this build does not know (written by a newer Holon?)"
        )),
        _ => Ok(Cow::Borrowed(stored)),
    }
}

/// The length of a stored value's JSON, from its header when packed
/// (without decompressing it; a corrupt header reads as its stored size).
pub(crate) fn json_len(stored: &[u8]) -> usize {
    match stored.first() {
        Some(&LZ4_DICT_V1) => stored
            .get(1..HEADER)
            .and_then(|b| b.try_into().ok())
            .map(|b| u32::from_le_bytes(b) as usize)
            .filter(|len| *len <= MAX_PACKED)
            .unwrap_or(stored.len()),
        _ => stored.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "event_seq": 7, "kind": "message_admitted", "agent_id": "main",
            "provenance": {"origin": "operator", "trust": "trusted_operator"},
            "payload": {"message": {"body": {"type": "text", "text": text}}},
        }))
        .unwrap()
    }

    #[test]
    fn a_record_round_trips_and_shrinks() {
        let json = record("look at the failing build and report what broke");
        let stored = pack(json.clone());
        assert_eq!(stored[0], LZ4_DICT_V1);
        assert!(
            stored.len() * 2 < json.len(),
            "{} of {}",
            stored.len(),
            json.len()
        );
        assert_eq!(unpack(&stored).unwrap().as_ref(), json.as_slice());
    }

    #[test]
    fn a_values_json_length_is_read_from_its_header() {
        let json = record("look at the failing build and report what broke");
        let stored = pack(json.clone());
        assert!(matches!(unpack(&stored), Ok(Cow::Owned(_))));
        assert_eq!(json_len(&stored), json.len());
        assert!(matches!(unpack(&json), Ok(Cow::Borrowed(_))));
        assert_eq!(json_len(&json), json.len());
        // A corrupt length reads as the stored size.
        let mut bad = stored.clone();
        bad[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(json_len(&bad), bad.len());
    }

    #[test]
    fn small_and_incompressible_records_stay_json() {
        let small = br#"{"a":1}"#.to_vec();
        assert_eq!(pack(small.clone()), small);
        // Random-looking text LZ4 cannot shrink is kept as it is.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: String = (0..400)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'A' + (x % 58) as u8)
            })
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let json = serde_json::to_vec(&noise).unwrap();
        let stored = pack(json.clone());
        assert_eq!(stored, json);
        assert!(matches!(unpack(&stored), Ok(Cow::Borrowed(_))));
    }

    fn refused(stored: &[u8]) -> String {
        match unpack(stored) {
            Err(e) => e,
            Ok(json) => panic!("decoded a corrupt value: {json:?}"),
        }
    }

    #[test]
    fn corrupt_values_are_errors_not_panics_or_huge_allocations() {
        let stored = pack(record("a prompt long enough to be compressed by the store"));
        assert!(refused(&stored[..3]).contains("cut short"));
        let mut claim = stored.clone();
        claim[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(refused(&claim).contains("claims"));
        let mut short = stored.clone();
        short[1..5].copy_from_slice(&10u32.to_le_bytes());
        assert!(unpack(&short).is_err());
        let mut cut = stored.clone();
        cut.truncate(stored.len() - 4);
        assert!(unpack(&cut).is_err());
        assert!(refused(&[0x02, 0, 0]).contains("newer Holon"));
    }

    /// Dictionary v1 is frozen: records on disk were compressed against
    /// these exact bytes. A different dictionary needs a new tag.
    #[test]
    fn dictionary_v1_is_frozen() {
        let hash = DICT_V1.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
        assert_eq!((DICT_V1.len(), hash), (12_176, DICT_V1_FNV));
    }

    const DICT_V1_FNV: u64 = 0x7ecd_a205_ca78_eb7e;
}

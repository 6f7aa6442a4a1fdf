//! `BlockFilter`: which aligned blocks of a text may lie inside a searched form.
//!
//! A form at least `2 * block - 1` bytes long contains a whole aligned `block`-byte block of the
//! text wherever it starts, so sampling the text one aligned block at a time against the hashes
//! of every block-long substring of those forms finds every place where one of them may occur.
//! The set is two-level: a bitset small enough to stay in cache rejects almost every block, and
//! an open-addressing table of the full 64-bit hashes settles the rest. Only hashes are kept
//! here; a hash of a 4-byte block can be inverted by trying every block, which exposes nothing
//! new because the full automaton beside it holds the forms themselves.

use std::ops::Range;

/// A set of block hashes for the forms of one length tier.
pub(crate) struct BlockFilter {
    block_bytes: usize,
    /// The longest form of the tier: the window around a hit must be able to hold it.
    longest_form_bytes: usize,
    bits: Vec<u64>,
    index_shift: u32,
    /// Linear probing, at most half full; 0 marks an empty slot, so a hash of 0 is stored as 1
    /// (a collision only costs a wasted window search).
    table: Vec<u64>,
    table_mask: usize,
}

/// The block sizes the hash supports.
#[derive(Clone, Copy)]
pub(crate) enum BlockSize {
    Four,
    Sixteen,
}

impl BlockSize {
    pub(crate) fn bytes(self) -> usize {
        match self {
            BlockSize::Four => 4,
            BlockSize::Sixteen => 16,
        }
    }

    /// The shortest form that always contains a whole aligned block.
    pub(crate) fn shortest_covered_form(self) -> usize {
        2 * self.bytes() - 1
    }
}

impl BlockFilter {
    /// A filter over `forms`, every one at least `block_size.shortest_covered_form()` long;
    /// `None` when there are none.
    pub(crate) fn build<'form>(
        block_size: BlockSize,
        forms: impl Iterator<Item = &'form [u8]>,
    ) -> Option<Self> {
        let block_bytes = block_size.bytes();
        let mut longest_form_bytes = 0;
        let mut hashes: Vec<u64> = Vec::new();
        for form in forms {
            longest_form_bytes = longest_form_bytes.max(form.len());
            hashes.extend(form.windows(block_bytes).map(block_hash));
        }
        if hashes.is_empty() {
            return None;
        }
        hashes.sort_unstable();
        hashes.dedup();
        // About sixteen bits per hash keeps the first level's false hits near 6%, within 2^16
        // to 2^24 bits (8 KiB to 2 MiB, so it stays in a core's L2 cache).
        let wanted_bits = (hashes.len() * 16).next_power_of_two();
        let index_bits = wanted_bits.trailing_zeros().clamp(16, 24);
        let mut bits = vec![0_u64; (1_usize << index_bits) / 64];
        let index_shift = 64 - index_bits;
        let table_len = (hashes.len() * 2).next_power_of_two();
        let table_mask = table_len - 1;
        let mut table = vec![0_u64; table_len];
        for hash in &hashes {
            let index = (hash >> index_shift) as usize;
            if let Some(word) = bits.get_mut(index / 64) {
                *word |= 1 << (index % 64);
            }
            let stored = (*hash).max(1);
            let mut slot = (stored as usize) & table_mask;
            while table.get(slot).is_some_and(|found| *found != 0) {
                slot = (slot + 1) & table_mask;
            }
            if let Some(empty) = table.get_mut(slot) {
                *empty = stored;
            }
        }
        Some(Self {
            block_bytes,
            longest_form_bytes,
            bits,
            index_shift,
            table,
            table_mask,
        })
    }

    /// Windows that hold every occurrence of a form of this filter: an occurrence
    /// `[start, end)` containing the aligned block `[block, block + B)` has
    /// `end - start <= longest`, so it lies inside `[block + B - longest, block + longest)`.
    pub(crate) fn windows(&self, haystack: &[u8], windows: &mut Vec<Range<usize>>) {
        let longest = self.longest_form_bytes;
        for (index, block) in haystack.chunks_exact(self.block_bytes).enumerate() {
            if self.may_contain(block) {
                let block_start = index * self.block_bytes;
                let start = (block_start + self.block_bytes).saturating_sub(longest);
                let end = (block_start + longest).min(haystack.len());
                windows.push(start..end);
            }
        }
    }

    fn may_contain(&self, block: &[u8]) -> bool {
        let hash = block_hash(block);
        let index = (hash >> self.index_shift) as usize;
        let first_level = self
            .bits
            .get(index / 64)
            .is_some_and(|word| word & (1 << (index % 64)) != 0);
        first_level && self.table_contains(hash.max(1))
    }

    fn table_contains(&self, stored: u64) -> bool {
        let mut slot = (stored as usize) & self.table_mask;
        // The table is at most half full, so a probe always reaches an empty slot.
        while let Some(&found) = self.table.get(slot) {
            if found == stored {
                return true;
            }
            if found == 0 {
                return false;
            }
            slot = (slot + 1) & self.table_mask;
        }
        false
    }
}

/// A fast 64-bit mix of a 16-byte block, or of a 4-byte block (other lengths hash their first
/// bytes; the filter only hands it its own block size).
fn block_hash(block: &[u8]) -> u64 {
    let (low, high) = match block.split_first_chunk::<8>() {
        Some((low, rest)) => (
            u64::from_le_bytes(*low),
            rest.first_chunk::<8>()
                .map_or(0, |high| u64::from_le_bytes(*high)),
        ),
        None => (
            block
                .first_chunk::<4>()
                .map_or(0, |four| u64::from(u32::from_le_bytes(*four))),
            0,
        ),
    };
    let mut hash = (low.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ high.rotate_left(29))
        .wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    hash ^= hash >> 31;
    hash.wrapping_mul(0x1656_67B1_9E37_79F9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g17_every_covered_form_at_every_offset_lies_in_a_window() {
        for block_size in [BlockSize::Four, BlockSize::Sixteen] {
            let shortest = block_size.shortest_covered_form();
            for form_len in [shortest, shortest + 1, 3 * block_size.bytes() + 5] {
                let form: Vec<u8> = (0..form_len)
                    .map(|index| b'A' + (index % 26) as u8)
                    .collect();
                let filter = BlockFilter::build(block_size, [form.as_slice()].into_iter()).unwrap();
                for offset in 0..3 * block_size.bytes() {
                    let mut haystack = vec![b'.'; offset];
                    haystack.extend_from_slice(&form);
                    haystack.extend_from_slice(b"......");
                    let mut windows = Vec::new();
                    filter.windows(&haystack, &mut windows);
                    assert!(
                        windows
                            .iter()
                            .any(|window| window.start <= offset && offset + form_len <= window.end),
                        "block {} form {form_len} offset {offset}: {windows:?}",
                        block_size.bytes()
                    );
                }
            }
        }
    }

    #[test]
    fn g17_ordinary_blocks_are_rejected() {
        let form = b"sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";
        let filter = BlockFilter::build(BlockSize::Sixteen, [form.as_slice()].into_iter()).unwrap();
        let mut windows = Vec::new();
        filter.windows(
            &b"an ordinary log line that holds nothing secret at all.".repeat(50),
            &mut windows,
        );
        assert!(windows.is_empty(), "{windows:?}");
    }
}

//! A decoder's dynamic table (RFC 7541 §2.3.2, §4): the fields the peer's encoder chose to
//! index, newest first, bounded in size.

use std::cell::Cell;
use std::collections::VecDeque;

/// What an entry counts for (§4.1): its name and value and 32 bytes of assumed overhead.
pub const OVERHEAD: usize = 32;

struct Entry {
    /// Name then value, one allocation.
    bytes: Box<[u8]>,
    name_len: usize,
    memo: Memo,
}

/// A word the decoder's owner may keep with a dynamic table entry: what it concluded of the
/// entry's name and value, which never change while the entry lives, so that a field sent by
/// index again and again is judged once (`message::rules::remembered`). Zero until set.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Memo(Cell<u16>);

impl Memo {
    pub fn get(&self) -> u16 {
        self.0.get()
    }

    pub fn set(&self, value: u16) {
        self.0.set(value);
    }
}

impl Entry {
    fn size(&self) -> usize {
        self.bytes.len() + OVERHEAD
    }
}

pub struct Table {
    entries: VecDeque<Entry>,
    /// The sum of the entries' sizes.
    size: usize,
    /// The size the encoder last set (§6.3), at most the decoder's setting.
    max: usize,
}

impl Table {
    pub fn new(max: usize) -> Self {
        Table {
            entries: VecDeque::new(),
            size: 0,
            max,
        }
    }

    /// The entry `index` places from the newest (0 is the newest): its name, its value and
    /// its memo.
    pub fn get(&self, index: usize) -> Option<(&[u8], &[u8], &Memo)> {
        let entry = self.entries.get(index)?;
        let (name, value) = entry.bytes.split_at(entry.name_len);
        Some((name, value, &entry.memo))
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(test)]
    pub fn size(&self) -> usize {
        self.size
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Adds a field as the newest entry, evicting the oldest until it fits (§4.4). A field
    /// larger than the whole table empties it and is not added — that is not an error.
    pub fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + OVERHEAD;
        if size > self.max {
            self.entries.clear();
            self.size = 0;
            return;
        }
        self.evict_to(self.max - size);
        let mut bytes = Vec::with_capacity(name.len() + value.len());
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        self.entries.push_front(Entry {
            bytes: bytes.into_boxed_slice(),
            name_len: name.len(),
            memo: Memo::default(),
        });
        self.size += size;
    }

    /// Sets a new maximum size, evicting what no longer fits (§4.3).
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
        self.evict_to(max);
    }

    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            match self.entries.pop_back() {
                Some(entry) => self.size -= entry.size(),
                None => break,
            }
        }
        if self.entries.capacity() > 4 * self.entries.len().max(8) {
            self.entries.shrink_to(self.entries.len().max(8));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_newest_first_and_evicted_oldest_first() {
        let mut t = Table::new(100);
        t.insert(b"a", b"1"); // 34
        t.insert(b"bb", b"22"); // 36
        let field = |t: &Table, i| t.get(i).map(|(n, v, _)| (n.to_vec(), v.to_vec()));
        assert_eq!(field(&t, 0), Some((b"bb".to_vec(), b"22".to_vec())));
        assert_eq!(field(&t, 1), Some((b"a".to_vec(), b"1".to_vec())));
        assert_eq!(t.size(), 70);
        t.insert(b"c", b"333"); // 36: 106 > 100, so "a" goes
        assert_eq!(t.len(), 2);
        assert_eq!(t.size(), 72);
        assert_eq!(field(&t, 1), Some((b"bb".to_vec(), b"22".to_vec())));
        assert_eq!(field(&t, 2), None);
    }

    #[test]
    fn a_memo_stays_with_its_entry_and_a_new_entry_starts_without_one() {
        let mut t = Table::new(200);
        t.insert(b"a", b"1");
        if let Some((_, _, memo)) = t.get(0) {
            memo.set(7);
        }
        t.insert(b"b", b"2");
        assert_eq!(t.get(1).map(|(n, _, m)| (n, m.get())), Some((&b"a"[..], 7)));
        assert_eq!(t.get(0).map(|(_, _, m)| m.get()), Some(0));
    }

    #[test]
    fn a_field_larger_than_the_table_empties_it() {
        let mut t = Table::new(40);
        t.insert(b"a", b"1");
        t.insert(b"name", b"a value too long to fit");
        assert_eq!((t.len(), t.size()), (0, 0));
    }

    #[test]
    fn a_smaller_maximum_evicts_and_zero_empties() {
        let mut t = Table::new(200);
        for i in 0..5u8 {
            t.insert(&[b'a' + i], b"v"); // 34 each
        }
        assert_eq!(t.size(), 170);
        t.set_max(100);
        assert_eq!((t.len(), t.size()), (2, 68));
        assert_eq!(t.get(0).map(|(n, _, _)| n), Some(&b"e"[..]));
        t.set_max(0);
        assert_eq!((t.len(), t.size(), t.max()), (0, 0, 0));
    }
}

//! The HPACK decoder: header blocks to fields (RFC 7541 §3, §6).

use super::table::{Memo, Table, OVERHEAD};
use super::{huffman, integer, static_table, Error};

/// One decoded field, borrowed from the block, the tables or the decoder's scratch space until
/// the next field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field<'a> {
    pub name: &'a [u8],
    pub value: &'a [u8],
    /// Sent as "never indexed" (§6.2.3): a proxy passes it on the same way (§7.1.3).
    pub never_indexed: bool,
    /// The dynamic table entry's memo when the field was sent by its index in that table: the
    /// same name and value as every other time the entry is sent.
    pub memo: Option<&'a Memo>,
}

impl<'a> Field<'a> {
    /// A field as given, not from a dynamic table entry (no memo) and not never-indexed: what
    /// a caller that holds a name and a value checks.
    pub fn plain(name: &'a [u8], value: &'a [u8]) -> Self {
        Field {
            name,
            value,
            never_indexed: false,
            memo: None,
        }
    }
}

/// One connection's decoder: its dynamic table lives as long as the connection.
pub struct Decoder {
    table: Table,
    /// The most a size update may set: this side's SETTINGS_HEADER_TABLE_SIZE.
    limit: usize,
    /// The limit was lowered below the table's size: the encoder must say it has followed, with
    /// a size update at the start of the next block (§4.2).
    update_due: bool,
    /// Huffman-decoded names and values, reused.
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// A decoder whose dynamic table starts at `limit` bytes, and whose encoder may set it to at
    /// most that. A connection starts at 4,096, the protocol's initial value, whatever this
    /// side advertises: the peer's encoder may have sent blocks before it read this side's
    /// SETTINGS, and it changes its table's size only by a size update. A different
    /// SETTINGS_HEADER_TABLE_SIZE goes to `set_limit` once the peer has acknowledged it.
    pub fn new(limit: usize) -> Self {
        Decoder {
            table: Table::new(limit),
            limit,
            update_due: false,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// A new SETTINGS_HEADER_TABLE_SIZE of this side's, once the peer acknowledged it.
    pub fn set_limit(&mut self, limit: usize) {
        if limit < self.table.max() {
            self.update_due = true;
        }
        self.limit = limit;
    }

    /// Decodes one whole header block (the fragments of a HEADERS frame and its CONTINUATIONs,
    /// joined), handing each field to `emit` in order. A list larger than `max_list` is
    /// decoded to its end but handed over only up to the field that crossed the limit, and
    /// ends in `Error::ListTooLarge`.
    pub fn decode(
        &mut self,
        block: &[u8],
        max_list: usize,
        mut emit: impl FnMut(Field<'_>),
    ) -> Result<(), Error> {
        let Decoder {
            table,
            limit,
            update_due,
            name: name_buf,
            value: value_buf,
        } = self;
        let mut pos = 0;
        let mut fields = false;
        let mut list = 0usize;
        let mut too_large = false;
        let mut hand = |field: Field<'_>| {
            list = list.saturating_add(field.name.len() + field.value.len() + OVERHEAD);
            if list > max_list {
                too_large = true;
            }
            if !too_large {
                emit(field);
            }
        };
        while let Some(&first) = block.get(pos) {
            let rest = &block[pos..];
            if first & 0xe0 == 0x20 {
                // Dynamic table size update (§6.3): only before the block's first field (§4.2).
                if fields {
                    return Err(Error::Compression(
                        "a dynamic table size update after a field",
                    ));
                }
                let (size, n) = integer::decode(rest, 5)?;
                if size > *limit {
                    return Err(Error::Compression(
                        "a dynamic table size update above SETTINGS_HEADER_TABLE_SIZE",
                    ));
                }
                table.set_max(size);
                *update_due = false;
                pos += n;
                continue;
            }
            if *update_due {
                return Err(Error::Compression(
                    "no dynamic table size update after SETTINGS_HEADER_TABLE_SIZE was lowered",
                ));
            }
            fields = true;
            if first & 0x80 != 0 {
                // Indexed field (§6.1).
                let (index, n) = integer::decode(rest, 7)?;
                pos += n;
                hand(entry(table, index)?);
                continue;
            }
            // A literal (§6.2): with incremental indexing (01), never indexed (0001) or
            // without indexing (0000).
            let (prefix, indexing, never_indexed) = match first & 0xf0 {
                0x00 => (4, false, false),
                0x10 => (4, false, true),
                _ => (6, true, false),
            };
            let (index, n) = integer::decode(rest, prefix)?;
            pos += n;
            let name: &[u8] = if index == 0 {
                string(block, &mut pos, name_buf, "a name")?
            } else if let Some((name, _)) = static_table::get(index) {
                name
            } else {
                // Copied: the field may enter the table this name lives in, and push it out.
                let name = entry(table, index)?.name;
                name_buf.clear();
                name_buf.extend_from_slice(name);
                &name_buf[..]
            };
            let value = string(block, &mut pos, value_buf, "a value")?;
            hand(Field {
                name,
                value,
                never_indexed,
                memo: None,
            });
            if indexing {
                table.insert(name, value);
            }
        }
        if too_large {
            return Err(Error::ListTooLarge { limit: max_list });
        }
        Ok(())
    }
}

/// The field at `index` of the static table (1–61) or the dynamic one (62 on, newest first),
/// with the dynamic entry's memo.
fn entry(table: &Table, index: usize) -> Result<Field<'_>, Error> {
    if index == 0 {
        return Err(Error::Compression("index 0"));
    }
    let field = |name, value, memo| Field {
        name,
        value,
        never_indexed: false,
        memo,
    };
    if let Some((name, value)) = static_table::get(index) {
        return Ok(field(name, value, None));
    }
    table
        .get(index - static_table::STATIC.len() - 1)
        .map(|(name, value, memo)| field(name, value, Some(memo)))
        .ok_or(Error::Compression(
            "an index past the end of the dynamic table",
        ))
}

/// Reads a string literal (§5.2) at `pos`: the block's own bytes, or decoded into `scratch`.
fn string<'b>(
    block: &'b [u8],
    pos: &mut usize,
    scratch: &'b mut Vec<u8>,
    what: &'static str,
) -> Result<&'b [u8], Error> {
    let rest = block.get(*pos..).unwrap_or_default();
    let first = *rest.first().ok_or(Error::Truncated(what))?;
    let (len, n) = integer::decode(rest, 7)?;
    let bytes = rest
        .get(n..n.saturating_add(len))
        .ok_or(Error::Truncated(what))?;
    *pos += n + len;
    if first & 0x80 == 0 {
        return Ok(bytes);
    }
    scratch.clear();
    huffman::decode(bytes, scratch)
        .map_err(|_| Error::Compression("a malformed Huffman-coded string"))?;
    Ok(scratch)
}

#[cfg(test)]
mod tests;

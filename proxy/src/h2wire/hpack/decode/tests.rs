//! The decoder against RFC 7541 Appendix C, and against what it must refuse.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

type Owned = Vec<(String, String, bool)>;
type List = &'static [(&'static str, &'static str)];
/// A block's fields, the dynamic table after it (newest first), and the table's size.
type Expected = (List, List, usize);

fn decode(d: &mut Decoder, block: &[u8]) -> Result<Owned, Error> {
    let mut out = Vec::new();
    d.decode(block, 1 << 20, |f| {
        out.push((
            String::from_utf8(f.name.to_vec()).unwrap(),
            String::from_utf8(f.value.to_vec()).unwrap(),
            f.never_indexed,
        ))
    })?;
    Ok(out)
}

fn fields(list: &[(&str, &str)]) -> Owned {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string(), false))
        .collect()
}

fn table(d: &Decoder) -> Vec<(String, String)> {
    (0..d.table.len())
        .map(|i| {
            let (n, v, _) = d.table.get(i).unwrap();
            (
                String::from_utf8(n.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[test]
fn c_2_one_field_of_each_representation() {
    let mut d = Decoder::new(4096);
    let got = decode(
        &mut d,
        &hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"),
    )
    .unwrap();
    assert_eq!(got, fields(&[("custom-key", "custom-header")]));
    assert_eq!(d.table.size(), 55);

    let mut d = Decoder::new(4096);
    let got = decode(&mut d, &hex("040c 2f73 616d 706c 652f 7061 7468")).unwrap();
    assert_eq!(got, fields(&[(":path", "/sample/path")]));
    assert_eq!(d.table.len(), 0);

    let mut d = Decoder::new(4096);
    let got = decode(&mut d, &hex("1008 7061 7373 776f 7264 0673 6563 7265 74")).unwrap();
    assert_eq!(
        got,
        vec![("password".to_string(), "secret".to_string(), true)]
    );
    assert_eq!(d.table.len(), 0);

    let mut d = Decoder::new(4096);
    assert_eq!(
        decode(&mut d, &hex("82")).unwrap(),
        fields(&[(":method", "GET")])
    );
    assert_eq!(d.table.len(), 0);
}

const REQUEST_1: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
const REQUEST_2: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
const REQUEST_3: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];

fn requests(blocks: [&str; 3]) {
    let mut d = Decoder::new(4096);
    let expected: [Expected; 3] = [
        (REQUEST_1, &[(":authority", "www.example.com")], 57),
        (
            REQUEST_2,
            &[
                ("cache-control", "no-cache"),
                (":authority", "www.example.com"),
            ],
            110,
        ),
        (
            REQUEST_3,
            &[
                ("custom-key", "custom-value"),
                ("cache-control", "no-cache"),
                (":authority", "www.example.com"),
            ],
            164,
        ),
    ];
    for (block, (list, after, size)) in blocks.iter().zip(expected) {
        assert_eq!(decode(&mut d, &hex(block)).unwrap(), fields(list));
        assert_eq!(table(&d), pairs(after));
        assert_eq!(d.table.size(), size);
    }
}

#[test]
fn c_3_requests() {
    requests([
        "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "8286 84be 5808 6e6f 2d63 6163 6865",
        "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ]);
}

#[test]
fn c_4_requests_huffman_coded() {
    requests([
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ]);
}

const DATE_1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE_2: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
const LOCATION: &str = "https://www.example.com";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";

/// Appendix C.5 and C.6 set the decoder's table to 256 bytes, so that these responses evict.
fn responses(blocks: [&str; 3]) {
    let mut d = Decoder::new(256);
    let expected: [Expected; 3] = [
        (
            &[
                (":status", "302"),
                ("cache-control", "private"),
                ("date", DATE_1),
                ("location", LOCATION),
            ],
            &[
                ("location", LOCATION),
                ("date", DATE_1),
                ("cache-control", "private"),
                (":status", "302"),
            ],
            222,
        ),
        (
            &[
                (":status", "307"),
                ("cache-control", "private"),
                ("date", DATE_1),
                ("location", LOCATION),
            ],
            &[
                (":status", "307"),
                ("location", LOCATION),
                ("date", DATE_1),
                ("cache-control", "private"),
            ],
            222,
        ),
        (
            &[
                (":status", "200"),
                ("cache-control", "private"),
                ("date", DATE_2),
                ("location", LOCATION),
                ("content-encoding", "gzip"),
                ("set-cookie", COOKIE),
            ],
            &[
                ("set-cookie", COOKIE),
                ("content-encoding", "gzip"),
                ("date", DATE_2),
            ],
            215,
        ),
    ];
    for (block, (list, after, size)) in blocks.iter().zip(expected) {
        assert_eq!(decode(&mut d, &hex(block)).unwrap(), fields(list));
        assert_eq!(table(&d), pairs(after));
        assert_eq!(d.table.size(), size);
    }
}

#[test]
fn c_5_responses_evicting() {
    responses([
        "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a
         3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "4803 3330 37c1 c0bf",
        "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04
         677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49
         553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
    ]);
}

#[test]
fn c_6_responses_huffman_coded_evicting() {
    responses([
        "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e
         919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        "4883 640e ffc1 c0bf",
        "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7
         821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed
         4ee5 b106 3d50 07",
    ]);
}

fn refused(d: &mut Decoder, block: &[u8]) -> Error {
    let err = decode(d, block).unwrap_err();
    assert!(err.ends_connection(), "{err}");
    err
}

#[test]
fn broken_blocks_are_refused() {
    // Index 0, and one past the tables' end.
    assert_eq!(
        refused(&mut Decoder::new(4096), &[0x80]),
        Error::Compression("index 0")
    );
    assert!(matches!(
        refused(&mut Decoder::new(4096), &[0xbe]),
        Error::Compression(_)
    ));
    // A literal whose name index is past the end.
    assert!(matches!(
        refused(&mut Decoder::new(4096), &hex("7e 01 61")),
        Error::Compression(_)
    ));
    // Strings that end early, or are not there.
    assert!(matches!(
        refused(&mut Decoder::new(4096), &hex("400a 6375")),
        Error::Truncated(_)
    ));
    assert!(matches!(
        refused(&mut Decoder::new(4096), &hex("40")),
        Error::Truncated(_)
    ));
    assert!(matches!(
        refused(&mut Decoder::new(4096), &hex("0401")),
        Error::Truncated(_)
    ));
    // A Huffman-coded value that spells EOS.
    assert!(matches!(
        refused(&mut Decoder::new(4096), &hex("0484 ffff ffff")),
        Error::Compression(_)
    ));
    // A size update after a field, and one above the limit.
    assert!(matches!(
        refused(&mut Decoder::new(4096), &hex("82 20")),
        Error::Compression(_)
    ));
    assert!(
        matches!(
            refused(&mut Decoder::new(4096), &hex("3fe2 1f")),
            Error::Compression(_)
        ),
        "4,097"
    );
}

#[test]
fn size_updates() {
    let mut d = Decoder::new(4096);
    decode(
        &mut d,
        &hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"),
    )
    .unwrap();
    assert_eq!(d.table.len(), 1);
    // Two updates at the start (down to 0, then back up to 4,096) empty the table (§4.2).
    decode(&mut d, &hex("20 3fe1 1f 82")).unwrap();
    assert_eq!((d.table.len(), d.table.max()), (0, 4096));

    // A lowered SETTINGS_HEADER_TABLE_SIZE: the next block must begin with an update to it.
    d.set_limit(100);
    assert!(matches!(refused(&mut d, &hex("82")), Error::Compression(_)));
    let mut d = Decoder::new(4096);
    d.set_limit(100);
    assert!(
        matches!(refused(&mut d, &hex("3f46")), Error::Compression(_)),
        "101 is above 100"
    );
    let mut d = Decoder::new(4096);
    d.set_limit(100);
    assert_eq!(
        decode(&mut d, &hex("3f45 82")),
        Ok(fields(&[(":method", "GET")])),
        "100"
    );
    assert_eq!(
        decode(&mut d, &hex("82")),
        Ok(fields(&[(":method", "GET")])),
        "only once"
    );
    // Raising it asks for nothing.
    let mut d = Decoder::new(4096);
    d.set_limit(8192);
    assert_eq!(
        decode(&mut d, &hex("82")),
        Ok(fields(&[(":method", "GET")]))
    );
}

#[test]
fn a_list_too_large_is_decoded_to_its_end_and_keeps_the_table() {
    let block = hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d");
    let mut d = Decoder::new(4096);
    let mut seen = Vec::new();
    // :method GET is 42 bytes, :scheme http 43: the second crosses 80.
    let err = d
        .decode(&block, 80, |f| seen.push(f.name.to_vec()))
        .unwrap_err();
    assert_eq!(err, Error::ListTooLarge { limit: 80 });
    assert!(!err.ends_connection());
    assert_eq!(seen, vec![b":method".to_vec()]);
    // The :authority literal at the end still entered the table: the next block can use it.
    assert_eq!(table(&d), pairs(&[(":authority", "www.example.com")]));
    assert_eq!(
        decode(&mut d, &hex("8286 84be 5808 6e6f 2d63 6163 6865")).unwrap(),
        fields(REQUEST_2)
    );
}

#[test]
fn a_field_named_from_the_entry_it_evicts() {
    // A 1-entry table (90 bytes) holds "custom-key: custom-header" (55). A literal with
    // indexing named by index 62 (that entry) and a long value evicts it on insertion.
    let mut d = Decoder::new(90);
    decode(
        &mut d,
        &hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"),
    )
    .unwrap();
    let got = decode(&mut d, &hex("7e 0c 6c6f 6e67 6572 2076 616c 7565")).unwrap();
    assert_eq!(got, fields(&[("custom-key", "longer value")]));
    assert_eq!(table(&d), pairs(&[("custom-key", "longer value")]));
}

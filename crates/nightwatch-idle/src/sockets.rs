//! Connections into an app, from the text of `/proc/PID/net/tcp` and `tcp6` read inside its
//! network namespace (any process of the container): a database client connected straight to
//! the app, not through the proxy, is activity the proxy never sees.

/// TCP state `ESTABLISHED` in the kernel's table.
const ESTABLISHED: &str = "01";

/// Established connections whose local port is one of `ports`. Lines that do not read as the
/// kernel writes them are skipped, never guessed at.
pub fn established_on(table: &str, ports: &[u16]) -> usize {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let _slot = fields.next()?;
            let local = fields.next()?;
            let _remote = fields.next()?;
            let state = fields.next()?;
            let (_, port) = local.rsplit_once(':')?;
            let port = u16::from_str_radix(port, 16).ok()?;
            (state == ESTABLISHED && ports.contains(&port)).then_some(())
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TABLE: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999        0 21345 1 0000000000000000 100 0 0 10 0
   1: 0200A8C0:1538 0100A8C0:D2F4 01 00000000:00000000 02:000A3C7B 00000000   999        0 21999 2 0000000000000000 20 4 30 10 -1
   2: 0200A8C0:1F90 0100A8C0:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 22000 1 0000000000000000 20 4 30 10 -1
   3: 0200A8C0:1538 0100A8C0:D2F6 06 00000000:00000000 03:00000D2E 00000000     0        0 0 3 0000000000000000
";

    #[test]
    fn counts_established_connections_on_the_ports_asked() {
        // 0x1538 = 5432 (one listening, one established, one in TIME_WAIT); 0x1F90 = 8080.
        assert_eq!(established_on(TABLE, &[5432]), 1);
        assert_eq!(established_on(TABLE, &[8080]), 1);
        assert_eq!(established_on(TABLE, &[5432, 8080]), 2);
        assert_eq!(established_on(TABLE, &[22]), 0);
        assert_eq!(established_on("", &[5432]), 0);
    }

    #[test]
    fn ipv6_tables_read_the_same() {
        let six = "  sl  local_address                         remote_address                        st\n   0: 00000000000000000000000001000000:1538 00000000000000000000000001000000:C350 01 0\n";
        assert_eq!(established_on(six, &[5432]), 1);
    }

    proptest! {
        #[test]
        fn any_text_is_read_without_panic(text in "(?s).{0,2000}", port in any::<u16>()) {
            let n = established_on(&text, &[port]);
            prop_assert!(n <= text.lines().count());
        }
    }
}

//! `egress:`: the hosts network effects may reach, and the verdict for every other one.
//!
//! ```yaml
//! egress:
//!   allow: [github.com, "*.github.com", 10.0.0.0/8, "::1"]
//!   otherwise: deny
//! ```
//!
//! A command that talks to the network without naming where (`git push origin`, `pip install`,
//! `curl "$URL"`) reaches a host that is not on the list, as far as anyone can tell from its text.

use crate::lazy::{LazyGlob, Separator};
use nightwatch_core::Verdict;
use std::net::IpAddr;

/// The compiled `egress:` section.
#[derive(Clone, Debug)]
pub(crate) struct Egress {
    pub allow: Vec<HostPattern>,
    pub otherwise: Verdict,
}

/// One entry of `egress.allow`: a host glob or an address block.
#[derive(Clone, Debug)]
pub(crate) enum HostPattern {
    Glob(LazyGlob),
    Block { network: IpAddr, prefix: u8 },
}

impl HostPattern {
    pub(crate) fn parse(text: &str) -> Result<HostPattern, String> {
        let text = text.trim().to_ascii_lowercase();
        if text.is_empty() {
            return Err("an empty host".to_owned());
        }
        if let Some((address, prefix)) = text.split_once('/') {
            let network: IpAddr = address
                .parse()
                .map_err(|_| format!("bad address block {text:?} (expected e.g. 10.0.0.0/8)"))?;
            let most = if network.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = prefix
                .parse()
                .ok()
                .filter(|p| *p <= most)
                .ok_or_else(|| format!("bad prefix length in {text:?} (0 to {most})"))?;
            return Ok(HostPattern::Block { network, prefix });
        }
        LazyGlob::new(&text, Separator::Crossed)
            .map(HostPattern::Glob)
            .map_err(|kind| format!("bad host glob {text:?}: {kind}"))
    }

    fn is_match(&self, host: &str) -> bool {
        match self {
            HostPattern::Glob(glob) => glob.is_match(host),
            HostPattern::Block { network, prefix } => host
                .parse::<IpAddr>()
                .is_ok_and(|address| in_block(address, *network, *prefix)),
        }
    }
}

impl Egress {
    /// Why the network effect is not within `allow`: the first host outside it, or that no
    /// host is known. None when every named host is allowed.
    pub(crate) fn outside(&self, hosts: &[String]) -> Option<String> {
        if hosts.is_empty() {
            return Some("the text does not say which host it reaches".to_owned());
        }
        hosts.iter().find_map(|host| {
            let host = host.trim_end_matches('.').to_ascii_lowercase();
            let host = host.trim_start_matches('[').trim_end_matches(']');
            (!self.allow.iter().any(|p| p.is_match(host)))
                .then(|| format!("{host} is not in the policy's egress.allow"))
        })
    }
}

fn in_block(address: IpAddr, network: IpAddr, prefix: u8) -> bool {
    let (address, network, width) = match (address, network) {
        (IpAddr::V4(a), IpAddr::V4(n)) => (u128::from(u32::from(a)), u128::from(u32::from(n)), 32),
        (IpAddr::V6(a), IpAddr::V6(n)) => (u128::from(a), u128::from(n), 128),
        // An IPv4 address written as IPv6 (`::ffff:10.0.0.1`) is the IPv4 one.
        (IpAddr::V6(a), IpAddr::V4(n)) => match a.to_ipv4_mapped() {
            Some(a) => (u128::from(u32::from(a)), u128::from(u32::from(n)), 32),
            None => return false,
        },
        (IpAddr::V4(_), IpAddr::V6(_)) => return false,
    };
    let shift = width - u32::from(prefix);
    if shift >= 128 {
        return true;
    }
    address >> shift == network >> shift
}

/// The host of a URL (`https://user@Host:8443/p` is `host`), for a fetch.
pub(crate) fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn egress(allow: &[&str]) -> Egress {
        Egress {
            allow: allow
                .iter()
                .map(|a| HostPattern::parse(a).unwrap_or_else(|e| panic!("{e}")))
                .collect(),
            otherwise: Verdict::Deny,
        }
    }

    #[test]
    fn hosts_inside_and_outside_the_allow_list() {
        let e = egress(&[
            "github.com",
            "*.github.com",
            "10.0.0.0/8",
            "::1",
            "fd00::/8",
        ]);
        let table: &[(&[&str], bool)] = &[
            (&["github.com"], true),
            (&["api.github.com"], true),
            (&["GitHub.com."], true),
            (&["10.1.2.3"], true),
            (&["::1"], true),
            (&["[::1]"], true),
            (&["fd12::1"], true),
            (&["::ffff:10.0.0.1"], true),
            (&["evil.example"], false),
            (&["githubXcom"], false),
            (&["11.0.0.1"], false),
            (&["github.com", "evil.example"], false),
            (&[], false),
        ];
        for (hosts, inside) in table {
            let hosts: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
            assert_eq!(e.outside(&hosts).is_none(), *inside, "{hosts:?}");
        }
    }

    #[test]
    fn bad_allow_entries_are_refused() {
        for bad in ["", "10.0.0.0/33", "not-an-ip/8", "::/129", "a[b"] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(
            HostPattern::parse("0.0.0.0/0"),
            Ok(HostPattern::Block { prefix: 0, .. })
        ));
        assert!(
            egress(&["0.0.0.0/0"])
                .outside(&["8.8.8.8".into()])
                .is_none()
        );
    }

    #[test]
    fn url_hosts() {
        for (url, host) in [
            ("https://user:pw@Example.COM:8443/x?y", Some("example.com")),
            ("http://[::1]:8080/", Some("::1")),
            ("example.com/path", Some("example.com")),
            ("https:///nohost", None),
        ] {
            assert_eq!(url_host(url).as_deref(), host, "{url}");
        }
    }
}

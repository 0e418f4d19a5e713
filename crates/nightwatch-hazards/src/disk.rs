//! A disk near full: blocks or inodes of a real filesystem used at or above a threshold.
//!
//! Which mounts are looked at: every one in `/proc/self/mounts` except
//! - kernel and memory filesystems (`proc`, `sysfs`, `devtmpfs`, `tmpfs`, `cgroup2`, ...): they
//!   hold no data that outlives a boot, and a full `tmpfs` is memory, the memory guard's job;
//! - images that are full by design (`squashfs`, `iso9660`: snaps, live media);
//! - read-only mounts: nothing more will be written to them;
//! - `overlay` anywhere but `/`: a container's layers, which live on (and are counted with)
//!   the filesystem under `/var/lib/docker`; an overlay at `/` is a container's own root and
//!   the only view of its disk it has;
//! - a device already looked at under another mount point (a bind mount): its numbers are
//!   the same, so it is reported once, at its first mount point.

use serde_json::json;

use crate::{Check, Hazard, Seen};

/// A line of `/proc/self/mounts`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub source: String,
    pub point: String,
    pub fstype: String,
    pub read_only: bool,
}

/// Filesystems that hold nothing to fill, or are full by design.
const SKIPPED: &[&str] = &[
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "tmpfs",
    "ramfs",
    "cgroup",
    "cgroup2",
    "securityfs",
    "debugfs",
    "tracefs",
    "pstore",
    "bpf",
    "mqueue",
    "hugetlbfs",
    "configfs",
    "fusectl",
    "autofs",
    "binfmt_misc",
    "rpc_pipefs",
    "nsfs",
    "efivarfs",
    "selinuxfs",
    "squashfs",
    "iso9660",
    "fuse.lxcfs",
    "fuse.gvfsd-fuse",
    "fuse.portal",
    "nfsd",
];

/// `/proc/self/mounts`' text, its escapes (`\040` for a space) decoded. Lines that do not
/// read are skipped.
pub fn parse_mounts(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (source, point, fstype, options) = (
                fields.next()?,
                fields.next()?,
                fields.next()?,
                fields.next()?,
            );
            Some(Mount {
                source: unescape(source),
                point: unescape(point),
                fstype: fstype.to_owned(),
                read_only: options.split(',').any(|o| o == "ro"),
            })
        })
        .collect()
}

/// The kernel writes space, tab, newline and backslash in mount fields as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|d| {
            bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)) && d[0] <= b'3'
        });
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mounts worth looking at, in order (see the module's list).
pub fn watched(mounts: &[Mount]) -> Vec<Mount> {
    let mut seen_sources: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for m in mounts {
        let skipped = SKIPPED.contains(&m.fstype.as_str())
            || m.read_only
            || (m.fstype == "overlay" && m.point != "/");
        // The same device under two points (a bind mount, `/` and `/var/lib/docker`).
        let repeated = m.source.starts_with('/') && seen_sources.contains(&m.source.as_str());
        // A later mount over the same point hides the earlier one.
        if skipped || repeated {
            continue;
        }
        if m.source.starts_with('/') {
            seen_sources.push(&m.source);
        }
        out.retain(|earlier: &Mount| earlier.point != m.point);
        out.push(m.clone());
    }
    out
}

/// A filesystem's numbers, as `statvfs` gives them (in blocks of `fragment_size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub blocks: u64,
    pub blocks_free: u64,
    /// Free for unprivileged users (the reserve excluded), as `df` counts.
    pub blocks_available: u64,
    pub fragment_size: u64,
    pub inodes: u64,
    pub inodes_free: u64,
}

impl Usage {
    /// Percent of blocks used as `df` shows it: used / (used + available), rounded up.
    pub fn blocks_percent(&self) -> Option<u64> {
        let used = self.blocks.saturating_sub(self.blocks_free);
        percent(used, used.saturating_add(self.blocks_available))
    }

    /// Percent of inodes used; `None` when the filesystem has no fixed count (btrfs says 0).
    pub fn inodes_percent(&self) -> Option<u64> {
        percent(self.inodes.saturating_sub(self.inodes_free), self.inodes)
    }
}

fn percent(used: u64, total: u64) -> Option<u64> {
    if total == 0 {
        return None;
    }
    let (used, total) = (u128::from(used), u128::from(total));
    u64::try_from((used * 100).div_ceil(total)).ok()
}

/// One mount against the threshold.
pub fn judge(mount: &Mount, usage: Result<Usage, String>, threshold: u8) -> Check {
    let subject = mount.point.clone();
    let usage = match usage {
        Ok(usage) => usage,
        Err(why) => {
            return Check::new(
                Hazard::DiskNearFull,
                subject,
                Seen::Unknown,
                format!(
                    "{} ({}) could not be measured: {why}",
                    mount.point, mount.fstype
                ),
                "look with df -h and df -i",
            );
        }
    };
    let blocks = usage.blocks_percent();
    let inodes = usage.inodes_percent();
    let size = usage.blocks.saturating_mul(usage.fragment_size);
    let available = usage.blocks_available.saturating_mul(usage.fragment_size);
    let evidence = json!({
        "source": mount.source,
        "fstype": mount.fstype,
        "blocks_used_percent": blocks,
        "inodes_used_percent": inodes,
        "size_bytes": size,
        "available_bytes": available,
        "inodes": usage.inodes,
        "inodes_free": usage.inodes_free,
        "threshold_percent": threshold,
    });
    let over = |p: Option<u64>| p.is_some_and(|p| p >= u64::from(threshold));
    let mut full = Vec::new();
    if over(blocks) {
        full.push(format!(
            "{}% of its space is used ({} MiB left)",
            blocks.unwrap_or_default(),
            available / (1024 * 1024)
        ));
    }
    if over(inodes) {
        full.push(format!(
            "{}% of its inodes are used ({} left)",
            inodes.unwrap_or_default(),
            usage.inodes_free
        ));
    }
    let shown = |p: Option<u64>| p.map_or_else(|| "-".to_owned(), |p| format!("{p}%"));
    if full.is_empty() {
        Check::new(
            Hazard::DiskNearFull,
            subject,
            Seen::Ok,
            format!(
                "{}: {} of space and {} of inodes used (threshold {threshold}%)",
                mount.point,
                shown(blocks),
                shown(inodes)
            ),
            "",
        )
    } else {
        Check::new(
            Hazard::DiskNearFull,
            subject,
            Seen::Found,
            format!(
                "{} is near full: {} (threshold {threshold}%)",
                mount.point,
                full.join(", ")
            ),
            format!(
                "free space on {}: find what grew (du -xh --max-depth=2 {} | sort -h | tail; \
                 df -i for inodes), rotate or prune logs, old backups and images (docker system \
                 df), or grow the filesystem",
                mount.point, mount.point
            ),
        )
    }
    .with(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "proc /proc proc rw,relatime 0 0
/dev/vda / ext4 rw,relatime 0 0
tmpfs /run tmpfs rw,nosuid 0 0
/dev/vda /var/lib/docker ext4 rw,relatime 0 0
overlay /var/lib/docker/overlay2/abc/merged overlay rw 0 0
/dev/loop0 /snap/core/1 squashfs ro 0 0
/dev/vdb /srv/my\\040data xfs rw 0 0
/dev/vdc /mnt/ro ext4 ro,relatime 0 0
garbage
";

    #[test]
    fn real_filesystems_once_each() {
        let points: Vec<String> = watched(&parse_mounts(MOUNTS))
            .into_iter()
            .map(|m| m.point)
            .collect();
        assert_eq!(points, ["/", "/srv/my data"]);
    }

    #[test]
    fn overlay_root_of_a_container_is_watched() {
        let mounts = parse_mounts("overlay / overlay rw,relatime,lowerdir=/a 0 0\n");
        assert_eq!(watched(&mounts).len(), 1);
    }

    fn usage(used_pct: u64, inode_pct: u64) -> Usage {
        Usage {
            blocks: 1000,
            blocks_free: 1000 - used_pct * 10,
            blocks_available: 1000 - used_pct * 10,
            fragment_size: 4096,
            inodes: 100,
            inodes_free: 100 - inode_pct,
        }
    }

    #[test]
    fn threshold_on_blocks_and_inodes() {
        let root = &parse_mounts(MOUNTS)[1];
        assert_eq!(judge(root, Ok(usage(89, 10)), 90).seen, Seen::Ok);
        assert_eq!(judge(root, Ok(usage(90, 10)), 90).seen, Seen::Found);
        let inodes = judge(root, Ok(usage(10, 95)), 90);
        assert_eq!(inodes.seen, Seen::Found);
        assert!(inodes.what.contains("inodes"));
        assert_eq!(judge(root, Err("EACCES".into()), 90).seen, Seen::Unknown);
    }

    #[test]
    fn percent_is_df_like_and_total() {
        let reserved = Usage {
            blocks: 100,
            blocks_free: 10,
            blocks_available: 5,
            fragment_size: 1,
            inodes: 0,
            inodes_free: 0,
        };
        assert_eq!(reserved.blocks_percent(), Some(95));
        assert_eq!(reserved.inodes_percent(), None);
        let odd = Usage {
            blocks: 0,
            blocks_free: u64::MAX,
            blocks_available: 0,
            fragment_size: u64::MAX,
            inodes: u64::MAX,
            inodes_free: 0,
        };
        assert_eq!(odd.blocks_percent(), None);
        assert_eq!(odd.inodes_percent(), Some(100));
    }
}

//! Reading `/proc/self/mountinfo` (proc(5)): the local backend's sweep finds its scratch tmpfs
//! there, and the platform checks that nothing is mounted below a folder it removes.

use std::path::PathBuf;

/// A mount point as mountinfo writes it, unescaped: space, tab, newline and backslash appear
/// as `\ooo` (octal); anything else after a backslash is kept as it is.
pub fn unescape_mount_point(point: &str) -> String {
    let mut text = String::with_capacity(point.len());
    let mut rest = point;
    while let Some(at) = rest.find('\\') {
        text.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4).unwrap_or_default();
        match u8::from_str_radix(code, 8) {
            Ok(byte) if code.len() == 3 => {
                text.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            _ => {
                text.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    text.push_str(rest);
    text
}

/// One line's mount point, filesystem type and source.
pub fn point_type_and_source(line: &str) -> Option<(PathBuf, &str, &str)> {
    let mut fields = line.split(' ');
    let point = fields.nth(4)?;
    // Optional fields run up to the lone "-"; then the type and the source.
    let mut after = fields.skip_while(|field| *field != "-").skip(1);
    let fstype = after.next()?;
    let source = after.next()?;
    Some((PathBuf::from(unescape_mount_point(point)), fstype, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_gives_its_unescaped_point_its_type_and_its_source() {
        assert_eq!(
            unescape_mount_point("/run/a\\040b\\011c\\134d\\x"),
            "/run/a b\tc\\d\\x"
        );
        let line = "612 27 0:91 / /run/stepward/ab\\040c/scratch rw,nosuid,relatime shared:7 \
                    master:1 - tmpfs stepward-scratch rw,size=1024k,nr_inodes=5120,mode=711";
        assert_eq!(
            point_type_and_source(line),
            Some((
                PathBuf::from("/run/stepward/ab c/scratch"),
                "tmpfs",
                "stepward-scratch"
            ))
        );
        let plain = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard";
        assert_eq!(
            point_type_and_source(plain),
            Some((PathBuf::from("/"), "ext4", "/dev/vda"))
        );
    }
}

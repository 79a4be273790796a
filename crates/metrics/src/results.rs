//! Writing a results directory so that it is complete or absent, never half-written.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Marker file that identifies a directory as l4s-lab results (so that we only ever
/// replace our own output).
pub const MARKER: &str = "summary.json";

/// Write one file so that it is complete or absent: into a temporary sibling (hidden, named
/// after the process), then renamed into place; the temporary file is removed on failure.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let r = fs::write(&tmp, bytes).and_then(|_| fs::rename(&tmp, path));
    if r.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    r
}

/// A results directory being built in a temporary sibling; [`ResultsDir::commit`] renames it
/// into place. Dropping it without committing removes the temporary directory.
pub struct ResultsDir {
    tmp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl ResultsDir {
    /// Prepare to write `target`. Fails if `target` exists and is not an l4s-lab results
    /// directory (we never delete what we did not write).
    pub fn create(target: &Path) -> io::Result<ResultsDir> {
        if target.exists() && !(target.is_dir() && target.join(MARKER).is_file()) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists and is not an l4s-lab results directory (no {MARKER}); choose another --out",
                    target.display()
                ),
            ));
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent)?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "results".into());
        remove_stale(&parent, &name);
        let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
        if tmp.exists() {
            fs::remove_dir_all(&tmp)?;
        }
        fs::create_dir_all(&tmp)?;
        Ok(ResultsDir {
            tmp,
            target: target.to_path_buf(),
            committed: false,
        })
    }
    /// The (temporary) directory being written.
    pub fn dir(&self) -> &Path {
        &self.tmp
    }
    /// Path of a file inside the (temporary) directory.
    pub fn path(&self, file: &str) -> PathBuf {
        self.tmp.join(file)
    }
    /// Write a whole file.
    pub fn write(&self, file: &str, bytes: &[u8]) -> io::Result<()> {
        let mut f = fs::File::create(self.path(file))?;
        f.write_all(bytes)?;
        f.sync_all()
    }
    /// Move the finished directory into place, replacing an earlier l4s-lab result.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        if self.target.exists() {
            let old = self.tmp.with_extension("old");
            fs::rename(&self.target, &old)?;
            fs::rename(&self.tmp, &self.target)?;
            let _ = fs::remove_dir_all(&old);
        } else {
            fs::rename(&self.tmp, &self.target)?;
        }
        self.committed = true;
        Ok(self.target.clone())
    }
}

/// Remove `.NAME.tmp-PID` directories left by runs that were killed: their process no
/// longer exists (checked through /proc; elsewhere nothing is removed).
fn remove_stale(parent: &Path, name: &str) {
    let prefix = format!(".{name}.tmp-");
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

impl Drop for ResultsDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn commit_or_nothing() {
        let base = std::env::temp_dir().join(format!("l4s-results-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let target = base.join("run");
        {
            let r = ResultsDir::create(&target).unwrap();
            r.write(MARKER, b"{}").unwrap();
            // dropped without commit
        }
        assert!(!target.exists());
        assert_eq!(
            fs::read_dir(&base).unwrap().count(),
            0,
            "temporary directory left behind"
        );
        let r = ResultsDir::create(&target).unwrap();
        r.write(MARKER, b"{\"a\":1}").unwrap();
        r.commit().unwrap();
        assert_eq!(fs::read_to_string(target.join(MARKER)).unwrap(), "{\"a\":1}");
        // Replacing our own results works.
        let r = ResultsDir::create(&target).unwrap();
        r.write(MARKER, b"{\"a\":2}").unwrap();
        r.commit().unwrap();
        assert_eq!(fs::read_to_string(target.join(MARKER)).unwrap(), "{\"a\":2}");
        // A temporary directory left by a killed run (its process is gone) is removed.
        let stale = base.join(".run.tmp-4294967295");
        fs::create_dir_all(&stale).unwrap();
        fs::write(stale.join(MARKER), "half").unwrap();
        drop(ResultsDir::create(&target).unwrap());
        assert!(!stale.exists(), "stale temporary directory kept");
        // A foreign directory is refused.
        let foreign = base.join("foreign");
        fs::create_dir_all(&foreign).unwrap();
        fs::write(foreign.join("precious.txt"), "x").unwrap();
        assert!(ResultsDir::create(&foreign).is_err());
        assert!(foreign.join("precious.txt").exists());
        fs::remove_dir_all(&base).unwrap();
    }
}

//! Writing a results directory so that it is complete or absent, never half-written.

use std::collections::HashSet;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Marker file that identifies a directory as l4s-lab results (so that we only ever
/// replace our own output).
pub const MARKER: &str = "summary.json";

/// Write one file so that it is complete or absent: into a temporary sibling (hidden, named
/// after the process), synced to the disk, then renamed into place (so that a crash leaves
/// the old file or the new one whole, never a renamed file whose data had not reached the
/// disk); the temporary file is removed on failure.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let r = fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_all()))
        .and_then(|_| fs::rename(&tmp, path));
    if r.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    r
}

/// The file l4s writes into every results directory it makes: with it, and with nothing
/// but l4s's own files beside it ([`OWN_FILES`]), a directory may be replaced by a new run.
pub const OWNER_MARK: &str = ".l4s-results";

/// The tables a run writes as CSV while it runs and copies to Parquet after it (file names
/// without the extension): the flows' and the queues' time series and the distributions.
pub const TABLES: [&str; 3] = ["snapshots-flows", "snapshots-queues", "distributions"];

/// The file name of one of [`TABLES`] in one form: `ext` is `"csv"` or `"parquet"`.
pub fn table_file(table: &str, ext: &str) -> String {
    format!("{table}.{ext}")
}

/// What l4s writes in a results directory. A directory that holds anything else (a user's
/// notes, plots, a thesis) is never replaced or deleted.
pub const OWN_FILES: &[&str] = &[
    OWNER_MARK,
    "summary.json",
    "run-info.json",
    "scenario.toml",
    "snapshots-flows.csv",
    "snapshots-queues.csv",
    "snapshots-flows.parquet",
    "snapshots-queues.parquet",
    "distributions.csv",
    "distributions.parquet",
    "packets.parquet",
    "bottleneck.pcap",
    "report.html",
    "png",
];

/// Why `dir` may not be replaced, if it may not: it is not l4s-lab results, or it holds
/// files l4s did not write (named, so a person can move them). Each reason ends by saying
/// to write the results elsewhere, which a front end may follow with how.
pub fn foreign_content(dir: &Path) -> Option<String> {
    if !dir.is_dir() {
        return Some(format!(
            "{} exists and is not a directory: write the results elsewhere",
            dir.display()
        ));
    }
    // An empty folder holds nothing to lose (`mkdtemp`'s, say): the results take its place.
    if fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none()) {
        return None;
    }
    let ours = dir.join(OWNER_MARK).is_file() || dir.join(MARKER).is_file();
    if !ours {
        return Some(format!(
            "{} exists and is not an l4s-lab results directory (no {OWNER_MARK}): write the results elsewhere",
            dir.display()
        ));
    }
    let foreign = foreign_entries(dir, |name, _, is_dir| match name {
        // The charts exported as PNG: what else is in there is named below.
        "png" => is_dir,
        n => !is_dir && OWN_FILES.contains(&n),
    });
    let foreign = with_foreign_charts(foreign, dir, "png");
    if foreign.is_empty() {
        return None;
    }
    Some(format!(
        "{} holds files l4s did not write ({}): move them elsewhere to let a new run replace it, or write the results elsewhere",
        dir.display(),
        foreign.join(", ")
    ))
}

/// Whether `path`, or a folder on the way to it, is a symbolic link to nothing (so the
/// folder cannot be made there), said with the link's path.
pub fn dangling_link(path: &Path) -> Option<String> {
    let link = path
        .ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.is_symlink() && !a.exists())?;
    Some(if link == path {
        format!("{} is a symbolic link to nothing", link.display())
    } else {
        format!(
            "{} (on the way to {}) is a symbolic link to nothing",
            link.display(),
            path.display()
        )
    })
}

/// The entries of `dir` that `is_own(name, path, is_dir)` does not take as l4s's, sorted,
/// folders with a `/` after their name: what a person would have to move.
pub fn foreign_entries(dir: &Path, is_own: impl Fn(&str, &Path, bool) -> bool) -> Vec<String> {
    let mut foreign: Vec<String> = Vec::new();
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if !is_own(&name, &e.path(), is_dir) {
            foreign.push(if is_dir { format!("{name}/") } else { name });
        }
    }
    foreign.sort();
    foreign
}

/// `foreign` ([`foreign_entries`] of `dir`) with what in the folder of exported charts
/// `dir/charts` is not a PNG file, each as `charts/NAME` (a folder `charts/NAME/`), so a
/// person is told the very file to move, not the whole folder; sorted.
pub fn with_foreign_charts(mut foreign: Vec<String>, dir: &Path, charts: &str) -> Vec<String> {
    let path = dir.join(charts);
    if path.is_dir() && !path.is_symlink() {
        let inside = foreign_entries(&path, |name, _, is_dir| !is_dir && name.ends_with(".png"));
        foreign.extend(inside.into_iter().map(|n| format!("{charts}/{n}")));
        foreign.sort();
    }
    foreign
}

/// A results directory being built in a temporary sibling; [`ResultsDir::commit`] renames it
/// into place. Dropping it without committing removes the temporary directory.
///
/// While it lives it holds a lock on `.NAME.lock` beside the target (`flock`, released
/// however the process ends; the file is removed when done), so two runs into one
/// directory never mix: the second is refused at once.
pub struct ResultsDir {
    tmp: PathBuf,
    target: PathBuf,
    /// The folder that holds `target`, synced after the rename.
    parent: PathBuf,
    committed: bool,
    /// Dropped after the temporary folder is removed ([`Drop`] runs before the fields drop).
    _lock: Option<FolderLock>,
    /// Files (relative to `tmp`) known to be on the disk: [`ResultsDir::commit`] syncs the
    /// others.
    synced: Mutex<HashSet<PathBuf>>,
}

/// Make the file or folder at `path` reach the disk (`fsync`). A folder on a filesystem
/// that cannot sync folders (`EINVAL`) is taken as synced: there is nothing more to ask.
fn sync_path(path: &Path) -> io::Result<()> {
    match fs::File::open(path)?.sync_all() {
        // EINVAL: a filesystem that cannot sync folders.
        Err(e) if e.kind() == io::ErrorKind::InvalidInput && path.is_dir() => Ok(()),
        r => r,
    }
}

/// The folder `target` goes in (`.` for a bare name) and its name there.
fn parent_and_name(target: &Path) -> (PathBuf, String) {
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results".into());
    (parent, name)
}

/// `e` with the path it happened at and what was being done, of the same kind.
fn at(path: &Path, doing: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {doing}: {e}", path.display()))
}

/// Lock `path` (created if missing) for this process, or say who holds it. The file is
/// removed again when the lock drops; a process that opened it just before and locks it
/// just after finds the path gone or another file there, and tries again, so two processes
/// never both believe they hold the lock.
fn take_lock(path: &Path, target: &Path) -> io::Result<FolderLock> {
    use std::os::unix::fs::MetadataExt;
    loop {
        let f = fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| at(path, "cannot create the lock file", e))?;
        match f.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!(
                        "another l4s run is writing {} (it holds {}); wait for it or write the results elsewhere",
                        target.display(),
                        path.display()
                    ),
                ))
            }
            Err(fs::TryLockError::Error(e)) => return Err(e),
        }
        let (held, now) = (f.metadata()?, fs::metadata(path));
        if now.is_ok_and(|m| m.ino() == held.ino() && m.dev() == held.dev()) {
            return Ok(FolderLock {
                _file: f,
                path: path.to_path_buf(),
            });
        }
    }
}

impl ResultsDir {
    /// Prepare to write `target`, locked. Fails if `target` exists and is not an l4s-lab
    /// results directory, or holds files l4s did not write (we never delete what we did
    /// not write), or another run is writing it.
    pub fn create(target: &Path) -> io::Result<ResultsDir> {
        Self::create_with(target, true)
    }

    /// [`ResultsDir::create`]; without `lock` for a caller that already holds a lock over
    /// the target's folder (a campaign store).
    ///
    /// A `target` that is a symbolic link is written where it points, and the link is kept:
    /// the folder it names is replaced, never the link a person made.
    pub fn create_with(target: &Path, lock: bool) -> io::Result<ResultsDir> {
        if let Some(why) = dangling_link(target) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{why}: write the results elsewhere"),
            ));
        }
        let resolved;
        let target = if target.is_symlink() {
            resolved = fs::canonicalize(target).map_err(|e| at(target, "a symbolic link to nothing usable", e))?;
            resolved.as_path()
        } else {
            target
        };
        let (parent, name) = parent_and_name(target);
        if target.exists() {
            if let Some(why) = foreign_content(target) {
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, why));
            }
        }
        fs::create_dir_all(&parent).map_err(|e| at(&parent, "cannot create the folder", e))?;
        let lock = if lock { Some(FolderLock::take(target)?) } else { None };
        remove_stale(&parent, &name, lock.is_some());
        let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(|e| at(&tmp, "cannot remove the earlier temporary folder", e))?;
        }
        fs::create_dir_all(&tmp).map_err(|e| at(&tmp, "cannot create the folder", e))?;
        Ok(ResultsDir {
            tmp,
            target: target.to_path_buf(),
            parent,
            committed: false,
            _lock: lock,
            synced: Mutex::new(HashSet::new()),
        })
    }
    /// Where the directory goes when committed.
    pub fn target(&self) -> &Path {
        &self.target
    }
    /// The (temporary) directory being written.
    pub fn dir(&self) -> &Path {
        &self.tmp
    }
    /// Path of a file inside the (temporary) directory.
    pub fn path(&self, file: &str) -> PathBuf {
        self.tmp.join(file)
    }
    /// Write a whole file and sync it to the disk.
    pub fn write(&self, file: &str, bytes: &[u8]) -> io::Result<()> {
        let mut f = fs::File::create(self.path(file))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        self.synced(file);
        Ok(())
    }
    /// Write a whole file, readable at once, without waiting for it to reach the disk:
    /// [`ResultsDir::sync`] it while doing other work, or [`ResultsDir::commit`] will.
    pub fn write_unsynced(&self, file: &str, bytes: &[u8]) -> io::Result<()> {
        fs::write(self.path(file), bytes)
    }
    /// Sync `file`, written by anyone, to the disk now (on a thread of the caller's, beside
    /// other work), so that [`ResultsDir::commit`] need not wait for it.
    pub fn sync(&self, file: &str) -> io::Result<()> {
        sync_path(&self.path(file))?;
        self.synced(file);
        Ok(())
    }
    /// `file` was synced to the disk by the code that wrote it (as
    /// [`write_file_atomic`] and the Parquet writers do): [`ResultsDir::commit`] need not
    /// sync it again.
    pub fn synced(&self, file: &str) {
        self.synced
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(PathBuf::from(file));
    }
    /// Move the finished directory into place, replacing an earlier l4s-lab result (checked
    /// again now: a file a user put there while the run went keeps it from being replaced).
    ///
    /// Before the mark that completes the directory is written, every file in it reaches the
    /// disk: those not synced yet ([`ResultsDir::sync`]), whoever wrote them. Then each
    /// folder that names them and the mark, and after the rename the folder that holds it:
    /// so a crash leaves the earlier results or these whole, and a run reported as written
    /// stays written.
    pub fn commit(self) -> io::Result<PathBuf> {
        self.commit_syncing(&mut sync_path)
    }

    /// [`ResultsDir::commit`], with `sync` as the way a file or folder reaches the disk.
    fn commit_syncing(mut self, sync: &mut dyn FnMut(&Path) -> io::Result<()>) -> io::Result<PathBuf> {
        let done = std::mem::take(&mut *self.synced.lock().unwrap_or_else(|p| p.into_inner()));
        let mut folders = Vec::new();
        sync_files(&self.tmp, Path::new(""), &done, &mut folders, sync)?;
        // What counts is that the mark is there, which the sync of its folder makes last.
        self.write_unsynced(
            OWNER_MARK,
            b"l4s-lab results: l4s may replace this directory while it holds only its own files\n",
        )?;
        for folder in folders.iter().rev() {
            sync(folder)?;
        }
        if self.target.exists() {
            if let Some(why) = foreign_content(&self.target) {
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, why));
            }
            let mut old = self.tmp.clone().into_os_string();
            old.push(".old");
            let old = PathBuf::from(old);
            if old.exists() {
                fs::remove_dir_all(&old)?;
            }
            fs::rename(&self.target, &old)?;
            fs::rename(&self.tmp, &self.target)?;
            self.committed = true;
            sync(&self.parent)?;
            let _ = fs::remove_dir_all(&old);
        } else {
            fs::rename(&self.tmp, &self.target)?;
            self.committed = true;
            sync(&self.parent)?;
        }
        Ok(self.target.clone())
    }
}

/// Sync each file below `dir` (at `rel` inside the results) that is not in `done`, in the
/// order of their names, and list `dir` and the folders below it, outermost first.
fn sync_files(
    dir: &Path,
    rel: &Path,
    done: &HashSet<PathBuf>,
    folders: &mut Vec<PathBuf>,
    sync: &mut dyn FnMut(&Path) -> io::Result<()>,
) -> io::Result<()> {
    folders.push(dir.to_path_buf());
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(dir)?.collect::<io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = rel.join(e.file_name());
        if e.file_type()?.is_dir() {
            sync_files(&e.path(), &name, done, folders, sync)?;
        } else if !done.contains(&name) {
            sync(&e.path())?;
        }
    }
    Ok(())
}

/// Remove `.NAME.tmp-PID` directories (and `.NAME.tmp-PID.old`, the earlier results a
/// killed commit had moved aside) left by runs that were killed. Holding the target's lock,
/// every such leftover is a dead run's; without it only those whose process is gone
/// (checked through /proc; elsewhere nothing is removed).
fn remove_stale(parent: &Path, name: &str, locked: bool) {
    let prefix = format!(".{name}.tmp-");
    // What earlier versions moved an old result to while replacing it.
    let legacy_old = parent.join(format!(".{name}.old"));
    if locked && legacy_old.is_dir() {
        let _ = fs::remove_dir_all(&legacy_old);
    }
    let Ok(entries) = fs::read_dir(parent) else { return };
    let have_proc = Path::new("/proc/self").exists();
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|p| p.strip_suffix(".old").unwrap_or(p).parse::<u32>().ok())
        else {
            continue;
        };
        let dead = have_proc && !Path::new(&format!("/proc/{pid}")).exists();
        if pid != std::process::id() && (locked || dead) {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Remove what killed runs left in the results folders below `root` (down to three levels,
/// as `results/<scenario>/<variant>`): temporary directories `.NAME.tmp-PID` (and
/// `.NAME.tmp-PID.old`) whose process is gone, and lock files `.NAME.lock` that no process
/// holds. Nothing else is touched. Returns what was removed.
pub fn sweep_leftovers(root: &Path) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    if !Path::new("/proc/self").exists() {
        // Without /proc a dead process cannot be told from a live one: remove nothing.
        return Ok(removed);
    }
    sweep_dir(root, 3, &mut removed)?;
    Ok(removed)
}

fn sweep_dir(dir: &Path, depth: u32, removed: &mut Vec<PathBuf>) -> io::Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if let Some(rest) = name.strip_prefix('.') {
            // `.NAME.tmp-PID[.old]`: a dead process's unfinished results.
            if let Some((_, pid)) = rest.rsplit_once(".tmp-") {
                let pid = pid.strip_suffix(".old").unwrap_or(pid);
                if let Ok(pid) = pid.parse::<u32>() {
                    if is_dir && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                        fs::remove_dir_all(&path)?;
                        removed.push(path);
                    }
                    continue;
                }
            }
            // `.NAME.lock` that nobody holds.
            if !is_dir && rest.ends_with(".lock") {
                if let Ok(f) = fs::File::options().write(true).open(&path) {
                    if f.try_lock().is_ok() {
                        fs::remove_file(&path)?;
                        removed.push(path);
                    }
                }
                continue;
            }
        }
        if is_dir && depth > 0 {
            sweep_dir(&path, depth - 1, removed)?;
        }
    }
    Ok(())
}

/// The lock on `.NAME.lock` beside a folder `NAME` that is being written: held by each
/// [`ResultsDir`], and over a folder that holds several (a set of variants), so that two
/// writers into one folder at once do not mix (the second is refused at once). Released,
/// and its file removed, when dropped.
pub struct FolderLock {
    _file: fs::File,
    path: PathBuf,
}

impl FolderLock {
    pub fn take(target: &Path) -> io::Result<FolderLock> {
        let (parent, name) = parent_and_name(target);
        fs::create_dir_all(&parent).map_err(|e| at(&parent, "cannot create the folder", e))?;
        take_lock(&parent.join(format!(".{name}.lock")), target)
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        // Removed while still held (see `take_lock`); released when `_file` closes, after.
        let _ = fs::remove_file(&self.path);
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

    /// An empty folder of this test process's own under the system's temporary folder.
    fn fresh(tag: &str) -> PathBuf {
        let base = std::env::temp_dir().join(format!("l4s-results-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        base
    }

    #[test]
    fn every_table_in_both_forms_is_ours_to_replace() {
        for t in TABLES {
            for ext in ["csv", "parquet"] {
                let f = table_file(t, ext);
                assert!(OWN_FILES.contains(&f.as_str()), "{f} missing from OWN_FILES");
            }
        }
    }

    #[test]
    fn an_empty_folder_takes_results_and_a_folder_of_anything_else_is_refused() {
        let base = fresh("empty");
        let target = base.join("run");
        fs::create_dir_all(&target).unwrap();
        assert_eq!(foreign_content(&target), None);
        let r = ResultsDir::create(&target).unwrap();
        r.write(MARKER, b"{}").unwrap();
        r.commit().unwrap();
        assert!(target.join(MARKER).is_file() && target.join(OWNER_MARK).is_file());
        let mine = base.join("mine");
        fs::create_dir_all(mine.join("sub")).unwrap();
        assert!(foreign_content(&mine).is_some_and(|w| w.contains("not an l4s-lab results directory")));
        assert!(ResultsDir::create(&mine).is_err());
        assert!(mine.join("sub").is_dir());
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn results_written_through_a_symbolic_link_go_where_it_points_and_the_link_stays() {
        let base = fresh("symlink");
        let real = base.join("real");
        let r = ResultsDir::create(&real).unwrap();
        r.write(MARKER, b"first").unwrap();
        r.commit().unwrap();
        let link = base.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let r = ResultsDir::create(&link).unwrap();
        r.write(MARKER, b"second").unwrap();
        let written = r.commit().unwrap();
        assert!(link.is_symlink(), "the link was replaced");
        assert_eq!(written, fs::canonicalize(&real).unwrap());
        assert_eq!(fs::read(real.join(MARKER)).unwrap(), b"second");
        assert_eq!(fs::read(link.join(MARKER)).unwrap(), b"second");
        // A link to nothing is refused, and left alone.
        let dangling = base.join("dangling");
        std::os::unix::fs::symlink(base.join("gone"), &dangling).unwrap();
        let e = ResultsDir::create(&dangling).err().unwrap();
        assert!(
            e.to_string()
                .ends_with("dangling is a symbolic link to nothing: write the results elsewhere"),
            "{e}"
        );
        // And so is a folder under it, with the link named.
        let e = ResultsDir::create(&dangling.join("sub")).err().unwrap();
        assert!(
            e.to_string().contains("dangling (on the way to ")
                && e.to_string().contains("sub) is a symbolic link to nothing"),
            "{e}"
        );
        assert!(dangling.is_symlink() && !base.join("gone").exists());
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_sweep_removes_dead_runs_leftovers_and_nothing_else() {
        let base = fresh("sweep");
        let sc = base.join("xr");
        fs::create_dir_all(&sc).unwrap();
        // A dead process's unfinished variant (pid 0 is never a user process) and its old
        // copy; a live one's (ours); a lock nobody holds; a held one; a user's files.
        let dead = sc.join(".l4s.tmp-0");
        let dead_old = sc.join(".l4s.tmp-0.old");
        let alive = sc.join(format!(".l4s.tmp-{}", std::process::id()));
        for d in [&dead, &dead_old, &alive] {
            fs::create_dir_all(d).unwrap();
            fs::write(d.join(MARKER), "{}").unwrap();
        }
        let free = sc.join(".l4s.lock");
        fs::write(&free, "").unwrap();
        let held_path = sc.join(".classic.lock");
        let held = fs::File::create(&held_path).unwrap();
        held.try_lock().unwrap();
        fs::write(sc.join("notes.md"), "mine").unwrap();
        fs::create_dir_all(sc.join(".git")).unwrap();
        let mut removed = sweep_leftovers(&base).unwrap();
        removed.sort();
        let mut want = vec![dead.clone(), dead_old.clone(), free.clone()];
        want.sort();
        assert_eq!(removed, want);
        assert!(alive.is_dir() && held_path.is_file() && sc.join("notes.md").is_file() && sc.join(".git").is_dir());
        drop(held);
        let _ = fs::remove_dir_all(&base);
    }

    #[test]
    fn two_runs_into_one_directory_do_not_mix_and_dead_runs_leftovers_go() {
        let base = fresh("lock");
        let target = base.join("run");
        let first = ResultsDir::create(&target).unwrap();
        let e = ResultsDir::create(&target).err().expect("second writer refused");
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert!(e.to_string().contains("another l4s run is writing"), "{e}");
        first.write(MARKER, b"{}").unwrap();
        first.commit().unwrap();
        // Leftovers of a killed run of an older l4s (a live pid: not ours, but we hold the
        // lock, so it cannot be writing) and a half-replaced directory are removed.
        let live_pid = 1u32;
        let left = base.join(format!(".run.tmp-{live_pid}"));
        let old = base.join(".run.tmp-4294967295.old");
        let legacy = base.join(".run.old");
        for d in [&left, &old, &legacy] {
            fs::create_dir_all(d).unwrap();
            fs::write(d.join(MARKER), "x").unwrap();
        }
        let r = ResultsDir::create(&target).unwrap();
        assert!(!left.exists() && !old.exists() && !legacy.exists());
        r.write(MARKER, b"{}").unwrap();
        r.commit().unwrap();
        // Unlocked (a campaign store that holds its own lock) a live process's is kept.
        fs::create_dir_all(&left).unwrap();
        drop(ResultsDir::create_with(&target, false).unwrap());
        assert!(left.exists());
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn every_file_reaches_the_disk_before_the_mark_and_the_rename_after_it() {
        let base = fresh("sync");
        let target = base.join("run");
        let r = ResultsDir::create(&target).unwrap();
        let tmp = r.dir().to_path_buf();
        // Synced by the directory (`write`, `sync`) or by its writer (`synced`); written
        // behind its back, as the run's time series, the report and the charts are.
        r.write(MARKER, b"{}").unwrap();
        fs::write(r.path("snapshots-flows.csv"), "t\n1\n").unwrap();
        fs::write(r.path("distributions.csv"), "t\n2\n").unwrap();
        r.sync("distributions.csv").unwrap();
        fs::write(r.path("distributions.parquet"), "x").unwrap();
        r.synced("distributions.parquet");
        fs::create_dir_all(r.path("png")).unwrap();
        fs::write(r.path("png").join("c.png"), "p").unwrap();
        fs::write(r.path("report.html"), "<p>").unwrap();
        let mut seen = Vec::new();
        let out = r
            .commit_syncing(&mut |p| {
                // The rename comes after everything but the last sync, of its folder.
                seen.push((p.to_path_buf(), target.exists()));
                Ok(())
            })
            .unwrap();
        assert_eq!(out, target);
        let want: Vec<(PathBuf, bool)> = vec![
            (tmp.join("png").join("c.png"), false),
            (tmp.join("report.html"), false),
            (tmp.join("snapshots-flows.csv"), false),
            (tmp.join("png"), false),
            (tmp.clone(), false),
            (base.clone(), true),
        ];
        assert_eq!(seen, want);
        for f in [
            MARKER,
            "report.html",
            "snapshots-flows.csv",
            "distributions.csv",
            "distributions.parquet",
            OWNER_MARK,
        ] {
            assert!(target.join(f).is_file(), "{f}");
        }
        // A sync that fails stops the commit, and nothing is moved into place.
        let r = ResultsDir::create(&target).unwrap();
        r.write(MARKER, b"{\"a\":2}").unwrap();
        fs::write(r.path("snapshots-queues.csv"), "t\n").unwrap();
        let e = r
            .commit_syncing(&mut |p| {
                if p.ends_with("snapshots-queues.csv") {
                    Err(io::Error::other("disk full"))
                } else {
                    Ok(())
                }
            })
            .unwrap_err();
        assert_eq!(e.to_string(), "disk full");
        assert_eq!(fs::read_to_string(target.join(MARKER)).unwrap(), "{}");
        assert!(!target.join("snapshots-queues.csv").exists());
        // The real commit syncs through the filesystem, folders included.
        let r = ResultsDir::create(&target).unwrap();
        r.write(MARKER, b"{\"a\":3}").unwrap();
        fs::create_dir_all(r.path("png")).unwrap();
        fs::write(r.path("png").join("c.png"), "p").unwrap();
        r.commit().unwrap();
        assert_eq!(fs::read_to_string(target.join(MARKER)).unwrap(), "{\"a\":3}");
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn commit_or_nothing() {
        let base = fresh("test");
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
            "temporary directory or lock file left behind"
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
        // So is a directory that merely holds a summary.json beside a user's files, and a
        // results directory the user added a file or a folder to: nothing is deleted.
        for (tag, extra_file, extra_dir) in [
            ("thesis", Some("thesis.tex"), Some("chapters")),
            ("notes", Some("NOTES.md"), None),
            ("plots", None, Some("plots")),
        ] {
            let d = base.join(tag);
            let r = ResultsDir::create(&d).unwrap();
            r.write(MARKER, b"{}").unwrap();
            r.commit().unwrap();
            assert!(d.join(OWNER_MARK).is_file());
            if let Some(f) = extra_file {
                fs::write(d.join(f), "mine").unwrap();
            }
            if let Some(x) = extra_dir {
                fs::create_dir_all(d.join(x)).unwrap();
                fs::write(d.join(x).join("a.txt"), "mine").unwrap();
            }
            let e = ResultsDir::create(&d).err().expect("refused");
            assert!(e.to_string().contains("holds files l4s did not write"), "{e}");
            if let Some(f) = extra_file {
                assert!(e.to_string().contains(f), "{e}");
                assert_eq!(fs::read_to_string(d.join(f)).unwrap(), "mine");
            }
            if let Some(x) = extra_dir {
                assert!(e.to_string().contains(&format!("{x}/")), "{e}");
                assert!(d.join(x).join("a.txt").exists());
            }
        }
        let legacy = base.join("legacy");
        fs::create_dir_all(legacy.join("png")).unwrap();
        fs::write(legacy.join(MARKER), "{}").unwrap();
        fs::write(legacy.join("report.html"), "x").unwrap();
        fs::write(legacy.join("png").join("a.png"), "x").unwrap();
        assert!(foreign_content(&legacy).is_none(), "an older l4s's results are ours");
        fs::write(legacy.join("png").join("notes.txt"), "x").unwrap();
        fs::create_dir(legacy.join("png").join("old")).unwrap();
        fs::write(legacy.join("NOTES.md"), "x").unwrap();
        // A png/ folder with other files is not: those very files are named.
        let why = foreign_content(&legacy).expect("refused");
        assert!(why.contains("(NOTES.md, png/notes.txt, png/old/)"), "{why}");
        fs::remove_dir_all(&base).unwrap();
    }
}

//! MDBX's environment: opening it (one handle per datadir in a process), its size bound and
//! the file system's free space under it, and warming the data file's unused tail.

pub(crate) mod capacity;
pub(crate) mod env_open;
pub(crate) mod tail;

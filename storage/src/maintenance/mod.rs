//! Work on a datadir as a whole rather than on its blocks: the layout version and the
//! migrations from older layouts, hot backups, and giving free pages back to the file system.

pub(crate) mod backup;
pub(crate) mod block_migrate;
pub(crate) mod free_pages;
pub(crate) mod migrate;
pub(crate) mod state_lists_migrate;

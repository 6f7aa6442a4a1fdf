//! The copy-back filter (G12): which files a finished step may return to the workspace.

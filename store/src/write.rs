//! A remote object written through `std::io::Write`: a multipart upload that completes only at
//! `finish`, so no reader ever sees part of it. An object smaller than one part, or any object
//! on a plain HTTP server (which has no multipart upload), goes up in one PUT at `finish`,
//! which is as atomic.

use std::io;

use arrowsmith::source::ObjectWrite;
use arrowsmith::{Error, Result};
use bytes::Bytes;
use object_store::{MultipartUpload, ObjectStoreExt, PutPayload};
use tokio::task::JoinSet;

use crate::config::Target;
use crate::failure::{local_error, remote_error};
use crate::runtime::run;

/// The size of each part but the last: over the 5 MiB S3 and GCS require of every part but
/// the last, and the same for all (as R2 requires).
pub(crate) const PART_SIZE: usize = 8 * 1024 * 1024;

/// Parts uploading at once: the memory a write holds is about this many parts.
const PARTS_IN_FLIGHT: usize = 4;

/// An upload under way, and the parts still going up.
struct Upload {
    upload: Box<dyn MultipartUpload>,
    parts: JoinSet<object_store::Result<()>>,
}

impl Upload {
    /// Waits until fewer than `limit` parts are in flight; the first failed part's error.
    async fn wait_for(&mut self, limit: usize) -> object_store::Result<()> {
        while self.parts.len() > limit {
            match self.parts.join_next().await {
                Some(Ok(Ok(()))) | None => {}
                Some(Ok(Err(e))) => return Err(e),
                Some(Err(join)) => return Err(join.into()),
            }
        }
        Ok(())
    }

    /// Sends `part`, once there is room; on any failure the whole upload is aborted.
    async fn send(mut self, part: Bytes) -> object_store::Result<Upload> {
        if let Err(e) = self.wait_for(PARTS_IN_FLIGHT - 1).await {
            self.abort().await;
            return Err(e);
        }
        self.parts
            .spawn(self.upload.put_part(PutPayload::from(part)));
        Ok(self)
    }

    /// Completes the object, or aborts the upload when a part or the completion failed.
    async fn complete(mut self) -> object_store::Result<()> {
        let done = match self.wait_for(0).await {
            Ok(()) => self.upload.complete().await.map(|_| ()),
            Err(e) => Err(e),
        };
        if done.is_err() {
            self.abort().await;
        }
        done
    }

    /// Stops the parts in flight and releases the ones uploaded. Best effort: when the server
    /// is gone it cannot be told, and the upload stays invisible (never completed) until the
    /// bucket's lifecycle rule removes it.
    async fn abort(mut self) {
        self.parts.shutdown().await;
        let _ = self.upload.abort().await;
    }
}

enum State {
    /// Less than a part written: nothing sent yet.
    Buffering,
    /// A multipart upload under way.
    Uploading(Upload),
    /// Finished, aborted or failed: nothing more can be written.
    Closed,
}

/// The writer [`crate::ObjectStoreStorage::create_file`] returns.
pub(crate) struct RemoteWrite {
    target: Target,
    buffer: Vec<u8>,
    state: State,
}

impl RemoteWrite {
    pub(crate) fn new(target: Target) -> RemoteWrite {
        RemoteWrite {
            target,
            buffer: Vec::new(),
            state: State::Buffering,
        }
    }

    /// Sends every whole part the buffer holds. A plain HTTP server takes no parts: its
    /// object goes up in one PUT at `finish`.
    fn send_parts(&mut self) -> Result<()> {
        while self.target.listable && self.buffer.len() >= PART_SIZE {
            let rest = self.buffer.split_off(PART_SIZE);
            let part = Bytes::from(std::mem::replace(&mut self.buffer, rest));
            let upload = match std::mem::replace(&mut self.state, State::Closed) {
                State::Buffering => None,
                State::Uploading(upload) => Some(upload),
                State::Closed => return Err(self.closed()),
            };
            let store = self.target.store.clone();
            let path = self.target.path.clone();
            let sent = run(async move {
                let upload = match upload {
                    Some(upload) => upload,
                    None => Upload {
                        upload: store.put_multipart(&path).await?,
                        parts: JoinSet::new(),
                    },
                };
                upload.send(part).await
            })?;
            match sent {
                Ok(upload) => self.state = State::Uploading(upload),
                Err(e) => return Err(remote_error(&self.target, "upload a part", &e)),
            }
        }
        Ok(())
    }

    fn closed(&self) -> Error {
        local_error(
            &self.target,
            "this upload already finished, was aborted or failed; start the write again",
        )
    }
}

impl io::Write for RemoteWrite {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if matches!(self.state, State::Closed) {
            return Err(io::Error::other(self.closed()));
        }
        self.buffer.extend_from_slice(bytes);
        self.send_parts().map_err(io::Error::other)?;
        Ok(bytes.len())
    }

    /// Nothing to do: a part goes up when it is whole, and the object appears at `finish`.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ObjectWrite for RemoteWrite {
    fn finish(mut self: Box<Self>) -> Result<()> {
        let rest = Bytes::from(std::mem::take(&mut self.buffer));
        let store = self.target.store.clone();
        let path = self.target.path.clone();
        let done = match std::mem::replace(&mut self.state, State::Closed) {
            State::Closed => return Err(self.closed()),
            State::Buffering => {
                run(async move { store.put(&path, rest.into()).await.map(|_| ()) })?
            }
            State::Uploading(upload) => run(async move {
                let upload = if rest.is_empty() {
                    upload
                } else {
                    upload.send(rest).await?
                };
                upload.complete().await
            })?,
        };
        done.map_err(|e| remote_error(&self.target, "complete the upload", &e))
    }

    fn abort(mut self: Box<Self>) -> Result<()> {
        self.abort_upload()
    }
}

impl RemoteWrite {
    fn abort_upload(&mut self) -> Result<()> {
        self.buffer = Vec::new();
        match std::mem::replace(&mut self.state, State::Closed) {
            State::Uploading(upload) => run(upload.abort()),
            State::Buffering | State::Closed => Ok(()),
        }
    }
}

impl Drop for RemoteWrite {
    /// An upload dropped unfinished (an error, a panic) is aborted: no object appears.
    fn drop(&mut self) {
        let _ = self.abort_upload();
    }
}

/// The writer as the core's trait object.
pub(crate) fn create(target: Target) -> Box<dyn ObjectWrite> {
    Box::new(RemoteWrite::new(target))
}

/**
 * Where a Source's documents end up. `publish` always writes them into its publish folder (`outDir`), the
 * working copy from which the next run goes on; without a sink that folder is what is served (the folder output:
 * nothing more is done, nothing is slower). A sink (`PublishOptions.sink`) takes them further: an S3 bucket
 * (`createS3Documents`, s3-documents.ts), or any other store that can hold files under names.
 * @see Z39.99 §6 (the documents are found at their URLs, wherever they are stored)
 */

/** What a sink did with one publication's documents. */
export interface SinkResult {
  /** Documents written to the sink (new or changed). */
  uploaded: number;
  /** Documents the sink already held as they are. */
  unchanged: number;
  /** Documents no longer published, removed from the sink. */
  deleted: number;
  /** Bytes written. */
  bytes: number;
  /** Documents brought into the publish folder from the sink before the publication (a folder another run never filled). */
  downloaded: number;
}

/** A place the documents of a publication are copied to. */
export interface DocumentSink {
  /** Where, for messages (no credentials). */
  readonly location: string;
  /**
   * Before a publication: brings the publish folder `dir` up to what the sink holds (documents written by a
   * run elsewhere), so that the publication goes on from there. Answers how many documents it brought.
   */
  prepare(dir: string, signal?: AbortSignal): Promise<number>;
  /**
   * After a publication: makes the sink hold `documents` (paths relative to `dir`, `/`-separated) as they are
   * in `dir`, and no other document: those it held and that are no longer published are removed.
   */
  commit(dir: string, documents: readonly string[], signal?: AbortSignal): Promise<Omit<SinkResult, 'downloaded'>>;
}

import boto3

UPLOAD_TIMEOUT = 60  # seconds, for one part


class Client:
    """A thin wrapper around the S3 client."""

    def __init__(self, bucket):
        self.bucket = bucket
        self.s3 = boto3.client("s3")

    def put(self, key, body):
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)


def resume_upload(client, key, upload_id):
    """Restart a multipart upload from its last confirmed part."""
    parts = client.s3.list_parts(Bucket=client.bucket, Key=key, UploadId=upload_id).get("Parts", [])
    return parts[-1]["PartNumber"] + 1 if parts else 1

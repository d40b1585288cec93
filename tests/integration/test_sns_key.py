"""The process's one SNS signing key (governor_client.offline.sns_key): every moto world's subscription signs
with it, and each envelope still verifies against the certificate moto publishes for it."""

from __future__ import annotations

import base64
import json

import boto3
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.sns.models import sns_backends

from governor_client.offline import sns_key
from tests.conftest import REGION


def _envelope_and_certificate() -> tuple[dict[str, str], x509.Certificate]:
    """One message published in a fresh moto world to a topic with a queue subscribed: the envelope the
    queue received and the certificate moto published under its SigningCertURL."""
    with mock_aws():
        sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
        topic = sns.create_topic(Name="reports")["TopicArn"]
        queue = sqs.create_queue(QueueName="reader")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
        sns.publish(TopicArn=topic, Message="hello", Subject="greeting")
        [message] = sqs.receive_message(QueueUrl=queue)["Messages"]
        envelope = json.loads(message["Body"])
        pem = sns_backends[DEFAULT_ACCOUNT_ID][REGION]._message_public_keys[
            envelope["SigningCertURL"].rsplit("/", 1)[1]
        ]
        return envelope, x509.load_pem_x509_certificate(pem)


def _signed_text(envelope: dict[str, str]) -> bytes:
    fields = ("Message", "MessageId", "Timestamp", "TopicArn", "Type")
    return "".join(f"{name}\n{envelope[name]}\n" for name in fields).encode()


@pytest.mark.usefixtures("aws_credentials")
def test_every_world_signs_with_the_process_key_and_each_signature_verifies_against_its_certificate() -> None:
    assert sns_key.installed()
    worlds = [_envelope_and_certificate() for _ in range(2)]
    expected = sns_key.process_key().public_key().public_numbers()
    for envelope, certificate in worlds:
        public = certificate.public_key()
        assert isinstance(public, rsa.RSAPublicKey) and public.key_size == 2048
        assert public.public_numbers() == expected
        # verify() raises InvalidSignature on a mismatch
        public.verify(
            base64.b64decode(envelope["Signature"]), _signed_text(envelope), padding.PKCS1v15(), hashes.SHA256()
        )
    assert worlds[0][0]["SigningCertURL"] != worlds[1][0]["SigningCertURL"]  # a certificate per message, as moto's


@pytest.mark.usefixtures("aws_credentials")
def test_uninstalled_each_subscription_makes_its_own_key_again() -> None:
    sns_key.uninstall()
    try:
        keys = [_envelope_and_certificate()[1].public_key() for _ in range(2)]
    finally:
        sns_key.install()
    numbers = [key.public_numbers() for key in keys if isinstance(key, rsa.RSAPublicKey)]
    assert len(numbers) == 2 and numbers[0] != numbers[1]
    assert sns_key.process_key().public_key().public_numbers() not in numbers

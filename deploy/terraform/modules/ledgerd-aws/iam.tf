data "aws_iam_policy_document" "assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ec2.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "node" {
  # Only the secrets this cluster's nodes copy at boot.
  statement {
    sid       = "ReadLedgerdSecrets"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = local.secret_ids
  }

  dynamic "statement" {
    for_each = var.kms_key_id == null ? [] : [var.kms_key_id]
    content {
      sid       = "DecryptLedgerdSecrets"
      actions   = ["kms:Decrypt"]
      resources = [statement.value]
    }
  }
}

resource "aws_iam_role" "node" {
  name_prefix        = "${var.name}-node-"
  assume_role_policy = data.aws_iam_policy_document.assume.json
  tags               = local.tags
}

resource "aws_iam_role_policy" "node" {
  name_prefix = "ledgerd-secrets-"
  role        = aws_iam_role.node.id
  policy      = data.aws_iam_policy_document.node.json
}

resource "aws_iam_role_policy_attachment" "ssm" {
  count      = var.enable_ssm ? 1 : 0
  role       = aws_iam_role.node.name
  policy_arn = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
}

resource "aws_iam_instance_profile" "node" {
  name_prefix = "${var.name}-node-"
  role        = aws_iam_role.node.name
  tags        = local.tags
}
